package callback

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"time"
)

// Sentinel errors of URL validation and delivery.
var (
	// ErrDisabled means the allow-list is empty, so no callback is allowed.
	ErrDisabled = errors.New("callbacks are disabled")
	// ErrInvalidURL means the URL is malformed or uses a forbidden form.
	ErrInvalidURL = errors.New("invalid callback URL")
	// ErrHostNotAllowed means the host is not on the allow-list.
	ErrHostNotAllowed = errors.New("callback host is not allowed")
	// ErrRedirect means the receiver answered with a redirect, which is
	// never followed.
	ErrRedirect = errors.New("callback receiver redirected")
)

// Header names set on every callback.
const (
	SignatureHeader = "X-Ray-Signature" // "sha256=" + hex HMAC-SHA256 of the body
	JobIDHeader     = "X-Ray-Job-Id"
	userAgent       = "raygw-callback/1"
	// MaxURLLen bounds a callback URL.
	MaxURLLen = 2048
	// maxResponseBytes is how much of a receiver's answer is read.
	maxResponseBytes = 64 << 10
)

// Policy is what a callback URL must satisfy.
type Policy struct {
	Allow *AllowList
	// AllowPrivate lets callbacks reach private and loopback addresses and
	// use plain http (a receiver on a private network rarely has TLS).
	AllowPrivate bool
}

// CheckURL validates raw for use as a callback: an absolute https URL
// (http too when private networks are allowed) without credentials or
// fragment, whose host is on the allow-list. An IP-literal host that is
// blocked is refused here already; names are checked again at connect time.
func (p Policy) CheckURL(raw string) (*url.URL, error) {
	if p.Allow.Empty() {
		return nil, ErrDisabled
	}
	if len(raw) > MaxURLLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrInvalidURL, MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	switch {
	case u.Scheme != "https" && !(p.AllowPrivate && u.Scheme == "http"):
		if p.AllowPrivate {
			return nil, fmt.Errorf("%w: the scheme must be https or http", ErrInvalidURL)
		}
		return nil, fmt.Errorf("%w: the scheme must be https", ErrInvalidURL)
	case u.Opaque != "" || u.Host == "":
		return nil, fmt.Errorf("%w: the URL must be absolute with a host", ErrInvalidURL)
	case u.User != nil:
		return nil, fmt.Errorf("%w: credentials in the URL are not allowed", ErrInvalidURL)
	case u.Fragment != "" || u.RawFragment != "":
		return nil, fmt.Errorf("%w: a fragment is not allowed", ErrInvalidURL)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: bad port %q", ErrInvalidURL, port)
		}
	}
	host, ok := NormalizeHost(u.Hostname())
	if !ok {
		return nil, fmt.Errorf("%w: bad host %q", ErrInvalidURL, u.Hostname())
	}
	if !p.Allow.Allows(host) {
		return nil, fmt.Errorf("%q: %w", host, ErrHostNotAllowed)
	}
	if ip, err := netip.ParseAddr(host); err == nil && !p.AllowPrivate && Blocked(ip) {
		return nil, fmt.Errorf("%s: %w", ip, ErrBlockedAddress)
	}
	return u, nil
}

// Client posts callbacks through a dialer guarded by Control. It ignores
// proxy settings (a proxy would connect on its behalf, past the guard),
// follows no redirects, keeps no idle connections and reads at most 64 KiB
// of any answer.
type Client struct {
	hc      *http.Client
	timeout time.Duration
}

// NewClient returns a Client whose every POST is bounded by timeout.
func NewClient(timeout time.Duration, allowPrivate bool) *Client {
	d := &net.Dialer{Timeout: timeout, Control: Control(allowPrivate)}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 16 << 10,
		ForceAttemptHTTP2:      true,
	}
	return &Client{timeout: timeout, hc: &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Post sends body as JSON to target, signed with secret when it is not
// empty, and returns the receiver's status. A redirect answer is returned
// with ErrRedirect; a refused address wraps ErrBlockedAddress.
func (c *Client) Post(ctx context.Context, target, jobID string, body []byte, secret string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set(JobIDHeader, jobID)
	if secret != "" {
		req.Header.Set(SignatureHeader, Sign(secret, body))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post callback: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp.StatusCode, fmt.Errorf("status %d: %w", resp.StatusCode, ErrRedirect)
	}
	return resp.StatusCode, nil
}

// Sign is the X-Ray-Signature value for body: "sha256=" followed by the
// hex HMAC-SHA256 of the exact body bytes under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is the signature of body under secret, in
// constant time. Receivers written in Go can use it as a reference.
func Verify(secret string, body []byte, sig string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(sig))
}
