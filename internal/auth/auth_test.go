package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/raygw/raygw/internal/openai"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	keyA = "sk-raygw-aaaaaaaaaaaaaaaaaaaaaaaa"
	keyB = "sk-raygw-bbbbbbbbbbbbbbbbbbbbbbbb"
)

func TestNew(t *testing.T) {
	tests := []struct {
		name string
		keys []string
		want error
	}{
		{"none", nil, nil},
		{"two", []string{keyA, keyB}, nil},
		{"empty", []string{""}, ErrInvalidKey},
		{"space", []string{"a b"}, ErrInvalidKey},
		{"control", []string{"a\x01"}, ErrInvalidKey},
		{"non ascii", []string{"ключ"}, ErrInvalidKey},
		{"too long", []string{strings.Repeat("k", MaxKeyBytes+1)}, ErrInvalidKey},
		{"duplicate counts once", []string{keyA, keyA}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.keys)
			if !errors.Is(err, tt.want) {
				t.Fatalf("New(%d keys) error = %v, want %v", len(tt.keys), err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), keyA) {
				t.Fatalf("error leaks the key: %v", err)
			}
		})
	}
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  error
	}{
		{"", "", ErrMissing},
		{"Bearer abc", "abc", nil},
		{"bearer abc", "abc", nil},
		{"BEARER   abc", "abc", nil},
		{"Bearer", "", ErrMalformed},
		{"Bearer ", "", ErrMalformed},
		{"Basic YWJjOmRlZg==", "", ErrMalformed},
		{"Bearerabc", "", ErrMalformed},
		{"Bearer abc def", "", ErrMalformed},
		{"Bearer abc\t", "", ErrMalformed},
		{"Bearer ab\x00c", "", ErrMalformed},
		{"Bearer " + strings.Repeat("x", MaxKeyBytes+1), "", ErrMalformed},
		{"Token abc", "", ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.20q", tt.in), func(t *testing.T) {
			got, err := BearerToken(tt.in)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Fatalf("BearerToken(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestCheckAndFingerprint(t *testing.T) {
	a, err := New([]string{keyA, keyB})
	if err != nil {
		t.Fatal(err)
	}
	if dup, _ := New([]string{keyA, keyB, keyA}); dup.Len() != 2 {
		t.Fatalf("Len with a duplicate = %d, want 2", dup.Len())
	}
	fp, ok := a.Check(keyB)
	if !ok || fp != Fingerprint(keyB) || len(fp) != 8 {
		t.Fatalf("Check(keyB) = %q %v, want %q", fp, ok, Fingerprint(keyB))
	}
	for _, bad := range []string{"", keyA[:len(keyA)-1], keyA + "x", strings.ToUpper(keyA)} {
		if _, ok := a.Check(bad); ok {
			t.Errorf("Check(%q) accepted", bad)
		}
	}
	if got := a.Fingerprints(); len(got) != 2 || got[0] != Fingerprint(keyA) {
		t.Fatalf("Fingerprints = %v", got)
	}
}

func TestMiddleware(t *testing.T) {
	a, err := New([]string{keyA, keyB})
	if err != nil {
		t.Fatal(err)
	}
	none, _ := New(nil)
	tests := []struct {
		name      string
		auth      *Authenticator
		headers   []string
		status    int
		challenge string
	}{
		{"valid", a, []string{"Bearer " + keyA}, 200, ""},
		{"second key", a, []string{"bearer " + keyB}, 200, ""},
		{"missing", a, nil, 401, `Bearer realm="raygw"`},
		{"wrong key", a, []string{"Bearer nope"}, 401, `Bearer realm="raygw", error="invalid_token"`},
		{"basic", a, []string{"Basic " + keyA}, 401, `Bearer realm="raygw", error="invalid_request"`},
		{"two headers", a, []string{"Bearer " + keyA, "Bearer " + keyA}, 401, `Bearer realm="raygw", error="invalid_request"`},
		{"empty bearer", a, []string{"Bearer "}, 401, `Bearer realm="raygw", error="invalid_request"`},
		{"no keys configured", none, []string{"Bearer " + keyA}, 401, `Bearer realm="raygw"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotFP string
			h := tt.auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotFP, _ = FromContext(r.Context())
			}))
			r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			for _, v := range tt.headers {
				r.Header.Add("Authorization", v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d", rec.Code, tt.status)
			}
			if tt.status == 200 {
				if gotFP == "" || len(gotFP) != 8 {
					t.Fatalf("fingerprint in context = %q", gotFP)
				}
				return
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Fatalf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
			var env openai.Envelope
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if env.Error.Type != "authentication_error" || env.Error.Code == nil || *env.Error.Code != "invalid_api_key" || env.Error.Message == "" {
				t.Fatalf("envelope = %+v", env.Error)
			}
			if strings.Contains(rec.Body.String(), keyA) {
				t.Fatal("response leaks a key")
			}
		})
	}
}

func TestMiddlewareNeverLogsKeys(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	a, _ := New([]string{keyA})
	h := a.Middleware(http.NotFoundHandler())
	for _, cred := range []string{"Bearer " + keyA + "z", "Basic " + keyA, "Bearer " + keyA} {
		r := httptest.NewRequest(http.MethodGet, "/v1/models", nil)
		r.Header.Set("Authorization", cred)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if buf.Len() == 0 {
		t.Fatal("expected debug log lines for rejected requests")
	}
	if strings.Contains(buf.String(), keyA) {
		t.Fatalf("log contains a key: %s", buf.String())
	}
}

func TestReloadConcurrent(t *testing.T) {
	a, _ := New([]string{keyA})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// keyA is in every set, so it must always pass.
				if _, ok := a.Check(keyA); !ok {
					t.Error("keyA rejected during reload")
					return
				}
			}
		}()
	}
	for i := range 200 {
		keys := []string{keyA}
		if i%2 == 0 {
			keys = append(keys, keyB)
		}
		if err := a.Reload(keys); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if err := a.Reload([]string{""}); err == nil {
		t.Fatal("Reload accepted an empty key")
	}
	if _, ok := a.Check(keyA); !ok {
		t.Fatal("a failed Reload replaced the key set")
	}
}

func TestRotation(t *testing.T) {
	a, _ := New([]string{keyA})
	steps := []struct {
		keys        []string
		oldOK, nwOK bool
	}{
		{[]string{keyA}, true, false},
		{[]string{keyA, keyB}, true, true},
		{[]string{keyB}, false, true},
	}
	for i, s := range steps {
		if err := a.Reload(s.keys); err != nil {
			t.Fatal(err)
		}
		_, o := a.Check(keyA)
		_, n := a.Check(keyB)
		if o != s.oldOK || n != s.nwOK {
			t.Fatalf("step %d: old=%v new=%v, want %v %v", i, o, n, s.oldOK, s.nwOK)
		}
	}
}

func BenchmarkCheck(b *testing.B) {
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = fmt.Sprintf("sk-raygw-%032d", i)
	}
	a, _ := New(keys)
	b.ReportAllocs()
	for b.Loop() {
		a.Check("sk-raygw-not-a-key")
	}
}
