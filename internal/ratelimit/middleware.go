package ratelimit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/raygw/raygw/internal/auth"
	"github.com/raygw/raygw/internal/clientip"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/openai"
)

// Key strategies (RAY_RATE_LIMIT_KEY_STRATEGY).
const (
	StrategyIP       = "ip"
	StrategyAPIKey   = "api-key"
	StrategyIPAPIKey = "ip+api-key"
)

// KeyFunc names the client a request is counted against.
type KeyFunc func(*http.Request) string

// KeyFor returns the KeyFunc of strategy. The ip part is clientip.From (proxy
// headers honored only when trustProxy is on and the peer is loopback), with
// IPv6 clients grouped by /64: one subscriber usually holds a whole /64, and
// counting its addresses one by one would let it sidestep the limit. The
// api-key part is the fingerprint auth put in the context; without one (auth
// off) it is a hash of the presented Authorization header, and requests with
// none share the key "-".
func KeyFor(strategy string, trustProxy bool) (KeyFunc, error) {
	ip := func(r *http.Request) string { return IPPart(clientip.From(r, trustProxy)) }
	switch strategy {
	case StrategyIP:
		return ip, nil
	case StrategyAPIKey:
		return APIKeyPart, nil
	case StrategyIPAPIKey:
		return func(r *http.Request) string { return ip(r) + "|" + APIKeyPart(r) }, nil
	}
	return nil, fmt.Errorf("%w: key strategy %q (expected %s, %s or %s)", ErrOptions, strategy, StrategyIP, StrategyAPIKey, StrategyIPAPIKey)
}

// IPPart is the ip component of a rate-limit key: the address, or its /64
// for IPv6.
func IPPart(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		if p, err := a.Prefix(64); err == nil {
			return p.String()
		}
	}
	return a.String()
}

// APIKeyPart is the api-key component of a rate-limit key: "k:" and the auth
// fingerprint, "h:" and 16 hex digits of SHA-256 of the raw Authorization
// header when auth did not run, or "-" when there is none. A raw key never
// becomes part of a map key, so a key never sits in memory longer than the
// request.
func APIKeyPart(r *http.Request) string {
	if fp, ok := auth.FromContext(r.Context()); ok {
		return "k:" + fp
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return "-"
	}
	d := sha256.Sum256([]byte(h))
	return "h:" + hex.EncodeToString(d[:8])
}

// FromConfig builds the limiter and key function RAY_RATE_LIMIT_* describe.
// It returns nil, nil, nil when rate limiting is disabled.
func FromConfig(c config.RateLimit, now func() time.Time) (*Limiter, KeyFunc, error) {
	if !c.Enabled {
		return nil, nil, nil
	}
	key, err := KeyFor(c.KeyStrategy, c.TrustProxyHeaders)
	if err != nil {
		return nil, nil, fmt.Errorf("RAY_RATE_LIMIT_KEY_STRATEGY: %w", err)
	}
	l, err := New(Options{Window: config.Duration(c.WindowMS), Max: c.MaxRequests, MaxKeys: c.MaxKeys, Now: now})
	if err != nil {
		return nil, nil, fmt.Errorf("RAY_RATE_LIMIT_*: %w", err)
	}
	return l, key, nil
}

// Middleware counts each request against key(r). Every response carries
// X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (seconds
// until the count is back to zero); a request over the limit is answered 429
// in the OpenAI shape (type "requests", code "rate_limit_exceeded") with
// Retry-After, and never reaches next.
func (l *Limiter) Middleware(key KeyFunc, next http.Handler) http.Handler {
	log := slog.Default().With("component", "ratelimit")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := l.Allow(key(r))
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.Reset), 10))
		if !d.Allowed {
			log.Debug("request limited", "method", r.Method, "path", r.URL.Path, "retry_after", d.RetryAfter)
			openai.WriteError(w, TooMany(d, l.Window()))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// TooMany is the 429 answer for a denied decision.
func TooMany(d Decision, window time.Duration) *openai.Error {
	secs := ceilSeconds(d.RetryAfter)
	return &openai.Error{
		Status:  http.StatusTooManyRequests,
		Type:    "requests",
		Code:    "rate_limit_exceeded",
		Message: fmt.Sprintf("Rate limit reached: %d requests per %s. Please try again in %ds.", d.Limit, window, secs),
		Header:  http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}},
	}
}

// Window is the configured window length.
func (l *Limiter) Window() time.Duration { return time.Duration(l.window) }

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
