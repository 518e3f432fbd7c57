package ratelimit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/auth"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/openai"
)

func TestMiddleware(t *testing.T) {
	l, clk := newTest(t, 2, 16)
	key, err := KeyFor(StrategyIP, false)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	h := l.Middleware(key, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++ }))
	do := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
		r.RemoteAddr = "198.51.100.9:1234"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	clk.Add(30 * time.Second)
	for i, want := range []struct {
		status    int
		remaining string
		reset     string
		retry     string
	}{
		{200, "1", "90", ""},
		{200, "0", "90", ""},
		{429, "0", "90", "60"}, // next window, once 2×(1−g) ≤ 1: 30 s + 30 s
	} {
		rec := do()
		hd := rec.Header()
		if rec.Code != want.status || hd.Get("X-RateLimit-Limit") != "2" || hd.Get("X-RateLimit-Remaining") != want.remaining ||
			hd.Get("X-RateLimit-Reset") != want.reset || hd.Get("Retry-After") != want.retry {
			t.Fatalf("request %d: status %d headers %v; want %+v", i, rec.Code, hd, want)
		}
		if rec.Code == 429 {
			var env openai.Envelope
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
				t.Fatal(err)
			}
			if env.Error.Type != "requests" || env.Error.Code == nil || *env.Error.Code != "rate_limit_exceeded" {
				t.Fatalf("envelope %+v", env.Error)
			}
		}
	}
	if calls != 2 {
		t.Fatalf("next called %d times, want 2", calls)
	}
}

func TestKeyFor(t *testing.T) {
	withFP := func(r *http.Request) *http.Request {
		return r.WithContext(auth.WithFingerprint(r.Context(), "abcd1234"))
	}
	tests := []struct {
		name     string
		strategy string
		trust    bool
		remote   string
		xff      string
		authz    string
		ctx      func(*http.Request) *http.Request
		want     string
	}{
		{"ip", StrategyIP, false, "198.51.100.1:1", "203.0.113.1", "", nil, "198.51.100.1"},
		{"ip trusted loopback", StrategyIP, true, "127.0.0.1:1", "203.0.113.1", "", nil, "203.0.113.1"},
		{"ip trusted remote peer", StrategyIP, true, "198.51.100.1:1", "203.0.113.1", "", nil, "198.51.100.1"},
		{"api-key from auth", StrategyAPIKey, false, "198.51.100.1:1", "", "Bearer secret", withFP, "k:abcd1234"},
		{"api-key hashed without auth", StrategyAPIKey, false, "198.51.100.1:1", "", "Bearer secret", nil, "h:" + hash16("Bearer secret")},
		{"api-key none", StrategyAPIKey, false, "198.51.100.1:1", "", "", nil, "-"},
		{"ip+api-key", StrategyIPAPIKey, true, "[::1]:1", "2001:db8::5", "", withFP, "2001:db8::/64|k:abcd1234"},
		{"ipv6 grouped by /64", StrategyIP, false, "[2001:db8:1:2:aaaa::1]:1", "", "", nil, "2001:db8:1:2::/64"},
		{"ipv6 loopback untrusted", StrategyIP, false, "[::1]:1", "", "", nil, "::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kf, err := KeyFor(tt.strategy, tt.trust)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			if tt.xff != "" {
				r.Header.Set("X-Forwarded-For", tt.xff)
			}
			if tt.authz != "" {
				r.Header.Set("Authorization", tt.authz)
			}
			if tt.ctx != nil {
				r = tt.ctx(r)
			}
			if got := kf(r); got != tt.want {
				t.Fatalf("key = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := KeyFor("cookie", false); err == nil {
		t.Fatal("unknown strategy accepted")
	}
}

func hash16(s string) string {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", s)
	return APIKeyPart(r)[2:]
}

func TestFromConfig(t *testing.T) {
	l, k, err := FromConfig(config.RateLimit{Enabled: false}, nil)
	if l != nil || k != nil || err != nil {
		t.Fatal("disabled config should give nothing")
	}
	_, _, err = FromConfig(config.RateLimit{Enabled: true, WindowMS: 1000, MaxRequests: 1, MaxKeys: 1, KeyStrategy: "nope"}, nil)
	if err == nil {
		t.Fatal("bad strategy accepted")
	}
	l, k, err = FromConfig(config.RateLimit{Enabled: true, WindowMS: 60000, MaxRequests: 75, MaxKeys: 4096, KeyStrategy: "ip+api-key"}, nil)
	if err != nil || l == nil || k == nil || l.Window() != time.Minute {
		t.Fatalf("FromConfig = %v %v", l, err)
	}
}
