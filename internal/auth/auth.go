// Package auth owns API-key authentication: parsing the Bearer credential,
// comparing it against the configured keys in constant time, the key
// fingerprints that stand in for keys in logs, and the HTTP middleware that
// answers 401 in the OpenAI envelope. Client keys and admin (control-plane)
// keys are two Authenticators of the same type. Keys are swapped atomically by
// Reload, so rotation needs no restart.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// MaxKeyBytes bounds one key, and so the credential a client may present.
const MaxKeyBytes = 512

// Sentinel errors of Authenticate; the middleware maps them to messages.
var (
	ErrMissing     = errors.New("auth: no Bearer credential")
	ErrMalformed   = errors.New("auth: malformed Authorization header")
	ErrInvalid     = errors.New("auth: invalid API key")
	ErrNoKeys      = errors.New("auth: no keys configured")
	ErrInvalidKey  = errors.New("auth: unusable key")
	ErrDuplicateFP = errors.New("auth: two keys share a fingerprint")
)

// Authenticator checks presented keys against a key set that can be replaced
// while requests are in flight. The zero value is not usable; call New.
type Authenticator struct {
	set atomic.Pointer[keySet]
}

type keySet struct {
	digests [][sha256.Size]byte
	fps     []string
}

// New returns an Authenticator for keys. An empty list is allowed and makes
// every request fail (fail closed), which is what an admin API with no admin
// keys should do. A key that is empty, longer than MaxKeyBytes, or holds
// whitespace or control characters is an error; a key listed twice counts once.
func New(keys []string) (*Authenticator, error) {
	a := &Authenticator{}
	if err := a.Reload(keys); err != nil {
		return nil, err
	}
	return a, nil
}

// Reload atomically replaces the key set; requests already past the check
// keep their result. Safe for concurrent use. On error the old set stays.
//
// Rotation without downtime: Reload with old+new keys, move clients to the
// new key, then Reload with only the new key.
func (a *Authenticator) Reload(keys []string) error {
	ks := &keySet{}
	seen := map[string]int{}
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return fmt.Errorf("key %d: %w", i+1, err)
		}
		fp := Fingerprint(k)
		if j, dup := seen[fp]; dup {
			if keys[j] == k {
				continue // the same key listed twice, as mid-rotation lists may
			}
			return fmt.Errorf("keys %d and %d (fingerprint %s): %w", j+1, i+1, fp, ErrDuplicateFP)
		}
		seen[fp] = i
		ks.digests = append(ks.digests, sha256.Sum256([]byte(k)))
		ks.fps = append(ks.fps, fp)
	}
	a.set.Store(ks)
	return nil
}

func checkKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	}
	if len(k) > MaxKeyBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidKey, MaxKeyBytes)
	}
	for _, c := range []byte(k) {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%w: only printable ASCII without spaces is allowed", ErrInvalidKey)
		}
	}
	return nil
}

// Len is the number of keys in the current set.
func (a *Authenticator) Len() int { return len(a.set.Load().digests) }

// Fingerprints lists the fingerprints of the current keys, for logs.
func (a *Authenticator) Fingerprints() []string {
	return append([]string(nil), a.set.Load().fps...)
}

// Check reports whether key is one of the configured keys and returns its
// fingerprint. Every configured key is compared, each through a SHA-256
// digest with subtle.ConstantTimeCompare, so neither the length of a key
// nor its position in the list shows in the timing.
func (a *Authenticator) Check(key string) (fingerprint string, ok bool) {
	ks := a.set.Load()
	d := sha256.Sum256([]byte(key))
	match := -1
	for i := range ks.digests {
		if subtle.ConstantTimeCompare(d[:], ks.digests[i][:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return "", false
	}
	return ks.fps[match], true
}

// Fingerprint is the first 8 hex digits of the key's SHA-256: enough to tell
// keys apart in logs, useless for recovering the key. Never log a key itself.
func Fingerprint(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:4])
}

// BearerToken extracts the credential of an "Authorization: Bearer <token>"
// header value. The scheme is case-insensitive; the token must be non-empty,
// free of spaces and control characters, and at most MaxKeyBytes long.
func BearerToken(header string) (string, error) {
	if header == "" {
		return "", ErrMissing
	}
	scheme, rest, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrMalformed
	}
	tok := strings.TrimLeft(rest, " ")
	if tok == "" || len(tok) > MaxKeyBytes {
		return "", ErrMalformed
	}
	for _, c := range []byte(tok) {
		if c <= ' ' || c >= 0x7f {
			return "", ErrMalformed
		}
	}
	return tok, nil
}

// Authenticate checks r's Authorization header (exactly one is allowed) and
// returns the key's fingerprint.
func (a *Authenticator) Authenticate(r *http.Request) (string, error) {
	if a.Len() == 0 {
		return "", ErrNoKeys
	}
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", ErrMissing
	case 1:
	default:
		return "", ErrMalformed
	}
	tok, err := BearerToken(values[0])
	if err != nil {
		return "", err
	}
	fp, ok := a.Check(tok)
	if !ok {
		return "", ErrInvalid
	}
	return fp, nil
}

type ctxKey struct{}

// WithFingerprint returns ctx carrying the authenticated key's fingerprint.
func WithFingerprint(ctx context.Context, fp string) context.Context {
	return context.WithValue(ctx, ctxKey{}, fp)
}

// FromContext returns the fingerprint of the key that authenticated the
// request, if any.
func FromContext(ctx context.Context) (string, bool) {
	fp, ok := ctx.Value(ctxKey{}).(string)
	return fp, ok && fp != ""
}
