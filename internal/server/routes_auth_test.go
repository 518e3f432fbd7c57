package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
)

// secRouteAccess is the explicit auth decision for every route. A route
// registered without an entry here, or with a different class, fails
// TestEveryRouteHasAnAuthDecision: adding a route means deciding who may call it.
var secRouteAccess = map[string]Access{
	"GET /healthz":              Public,
	"GET /readyz":               Public,
	"GET /metrics":              Admin,
	"GET /v1/models":            Client,
	"POST /v1/chat/completions": Client,
	"POST /v1/completions":      Client,
	// The dashboard's static assets carry no data; the page calls the admin
	// API with the key the operator types.
	"GET /dashboard":           Public,
	"GET /dashboard/{file...}": Public,
}

const (
	testClientKey = "sk-client-0123456789abcdef"
	testAdminKey  = "sk-admin-0123456789abcdef"
)

// secTestBackend is an engine that is never ready.
type secTestBackend struct{}

func (secTestBackend) Client() (*openaicompat.Client, error) {
	return nil, openai.Unavailable(1, nil, "engine not ready")
}
func (secTestBackend) Ready() bool        { return false }
func (secTestBackend) ContextWindow() int { return 512 }

func newSecTestServer(t *testing.T, flags map[string]string) *Server {
	t.Helper()
	f := map[string]string{
		"RAY_AUTH_ENABLED":       "true",
		"RAY_API_KEYS":           testClientKey,
		"RAY_ADMIN_API_KEYS":     testAdminKey,
		"RAY_RATE_LIMIT_ENABLED": "false",
	}
	for k, v := range flags {
		f[k] = v
	}
	cfg, err := config.Load(config.Options{Flags: f})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Deps{Config: cfg, Backend: secTestBackend{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var secWildcard = regexp.MustCompile(`\{[^}]*\}`)

// secRequestFor builds a request that matches a ServeMux pattern.
func secRequestFor(pattern string) *http.Request {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = http.MethodGet, pattern
	}
	path = secWildcard.ReplaceAllString(path, "x")
	r := httptest.NewRequest(method, path, strings.NewReader(`{}`))
	r.Header.Set("Content-Type", "application/json")
	r.RemoteAddr = "198.51.100.7:4321"
	return r
}

func TestEveryRouteHasAnAuthDecision(t *testing.T) {
	s := newSecTestServer(t, nil)
	seen := map[string]bool{}
	for _, rt := range s.Routes() {
		seen[rt.Pattern] = true
		want, ok := secRouteAccess[rt.Pattern]
		if !ok {
			t.Errorf("route %q (access %d) has no entry in secRouteAccess (routes_auth_test.go): decide Public, Client or Admin and add it", rt.Pattern, rt.Access)
			continue
		}
		if rt.Access != want {
			t.Errorf("route %q has access %d, secRouteAccess says %d", rt.Pattern, rt.Access, want)
		}
	}
	for p := range secRouteAccess {
		if !seen[p] {
			t.Errorf("secRouteAccess lists %q, which is not registered", p)
		}
	}
}

// TestRoutesEnforceTheirAccess calls every registered route with no key, a
// client key and an admin key and checks who gets past authentication.
func TestRoutesEnforceTheirAccess(t *testing.T) {
	s := newSecTestServer(t, nil)
	h := s.Handler()
	creds := map[string]string{"none": "", "client": "Bearer " + testClientKey, "admin": "Bearer " + testAdminKey, "wrong": "Bearer sk-wrong"}
	allowed := map[Access]map[string]bool{
		Public: {"none": true, "client": true, "admin": true, "wrong": true},
		Client: {"client": true},
		Admin:  {"admin": true},
	}
	for _, rt := range s.Routes() {
		for name, cred := range creds {
			t.Run(rt.Pattern+"/"+name, func(t *testing.T) {
				r := secRequestFor(rt.Pattern)
				if cred != "" {
					r.Header.Set("Authorization", cred)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, r)
				got401 := rec.Code == http.StatusUnauthorized
				if want := !allowed[rt.Access][name]; got401 != want {
					t.Fatalf("status %d (%s); want 401=%v", rec.Code, strings.TrimSpace(rec.Body.String()), want)
				}
				if got401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), `Bearer realm="raygw"`) {
					t.Fatalf("401 without a Bearer challenge: %v", rec.Header())
				}
			})
		}
	}
}

func TestAdminRoutesFailClosedWithoutAdminKeys(t *testing.T) {
	s := newSecTestServer(t, map[string]string{"RAY_ADMIN_API_KEYS": "", "RAY_AUTH_ENABLED": "false"})
	h := s.Handler()
	n := 0
	for _, rt := range s.Routes() {
		if rt.Access != Admin {
			continue
		}
		n++
		for _, cred := range []string{"", "Bearer " + testClientKey, "Bearer " + testAdminKey} {
			r := secRequestFor(rt.Pattern)
			r.Header.Set("Authorization", cred)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("%s with %q: status %d, want 401", rt.Pattern, cred, rec.Code)
			}
		}
	}
	if n == 0 {
		t.Fatal("no admin routes registered; the test checks nothing")
	}
}

func TestClientRoutesAreRateLimited(t *testing.T) {
	s := newSecTestServer(t, map[string]string{
		"RAY_RATE_LIMIT_ENABLED": "true", "RAY_RATE_LIMIT_MAX_REQUESTS": "2", "RAY_RATE_LIMIT_WINDOW_MS": "60000",
		"RAY_RATE_LIMIT_KEY_STRATEGY": "ip+api-key", "RAY_RATE_LIMIT_TRUST_PROXY_HEADERS": "true",
	})
	h := s.Handler()
	do := func(pattern, xff, cred string) *httptest.ResponseRecorder {
		r := secRequestFor(pattern)
		r.RemoteAddr = "127.0.0.1:5000" // Caddy on the same host
		r.Header.Set("X-Forwarded-For", xff)
		r.Header.Set("Authorization", cred)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	client := "Bearer " + testClientKey
	for i, want := range []int{200, 200, 429} {
		rec := do("GET /v1/models", "203.0.113.1", client)
		if rec.Code != want || rec.Header().Get("X-RateLimit-Limit") != "2" {
			t.Fatalf("request %d: status %d headers %v, want %d with X-RateLimit-Limit", i, rec.Code, rec.Header(), want)
		}
	}
	if rec := do("GET /v1/models", "203.0.113.1", client); rec.Header().Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	if rec := do("GET /v1/models", "203.0.113.2", client); rec.Code != 200 {
		t.Fatalf("another client IP behind the proxy: status %d, want 200", rec.Code)
	}
	if rec := do("GET /v1/models", "203.0.113.1", "Bearer nope"); rec.Code != 401 {
		t.Fatalf("bad key: status %d, want 401 before the limiter", rec.Code)
	}
	for _, p := range []string{"GET /healthz", "GET /metrics"} {
		for range 3 {
			rec := do(p, "203.0.113.1", "Bearer "+testAdminKey)
			if rec.Code == 429 || rec.Header().Get("X-RateLimit-Limit") != "" {
				t.Fatalf("%s is rate limited: %d %v", p, rec.Code, rec.Header())
			}
		}
	}
}

func TestUnknownAccessIsRefused(t *testing.T) {
	s := newSecTestServer(t, nil)
	called := false
	h := s.sec.wrap(Route{Pattern: "GET /new", Access: Access(99)}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	r := httptest.NewRequest(http.MethodGet, "/new", nil)
	r.Header.Set("Authorization", "Bearer "+testAdminKey)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden || called {
		t.Fatalf("status %d, handler called %v; want 403 and not called", rec.Code, called)
	}
}

func TestReloadKeys(t *testing.T) {
	s := newSecTestServer(t, nil)
	h := s.Handler()
	status := func(key string) int {
		r := secRequestFor("GET /v1/models")
		r.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	const newKey = "sk-client-rotated-000000000"
	cfg := *s.cfg
	for _, step := range []struct {
		keys    []string
		old, nw int
	}{
		{[]string{testClientKey, newKey}, 200, 200},
		{[]string{newKey}, 401, 200},
	} {
		cfg.Auth.APIKeys = step.keys
		if err := s.ReloadKeys(&cfg); err != nil {
			t.Fatal(err)
		}
		if o, n := status(testClientKey), status(newKey); o != step.old || n != step.nw {
			t.Fatalf("keys %d: old key %d, new key %d; want %d, %d", len(step.keys), o, n, step.old, step.nw)
		}
	}
	cfg.Auth.APIKeys = nil
	if err := s.ReloadKeys(&cfg); err == nil || status(newKey) != 200 {
		t.Fatal("an empty reload must be refused and keep the keys")
	}
}
