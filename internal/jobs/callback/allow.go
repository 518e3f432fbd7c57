// Package callback owns raygw's outbound webhook client for async jobs: the
// host allow-list, URL validation, a dialer that refuses private and
// special-purpose addresses at connect time (so DNS rebinding cannot reach
// them), bounded POSTs that follow no redirects, and HMAC signatures.
package callback

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// ErrBadPattern means an allow-list entry is not a host name, an IP address
// or a *.suffix pattern.
var ErrBadPattern = errors.New("bad allowed-host pattern")

// maxHostLen is the longest DNS name (RFC 1035).
const maxHostLen = 253

// AllowList matches callback hosts against exact names and "*.suffix"
// patterns. "*.example.com" matches every name below example.com at any
// depth, but not example.com itself. The zero value allows nothing.
type AllowList struct {
	exact    map[string]bool
	suffixes []string // each begins with "."
}

// NewAllowList parses patterns (blank entries are skipped). Names compare
// case-insensitively and without a trailing dot.
func NewAllowList(patterns []string) (*AllowList, error) {
	a := &AllowList{exact: map[string]bool{}}
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(p, "*."); ok {
			host, ok := NormalizeHost(rest)
			if !ok || isIP(host) {
				return nil, fmt.Errorf("%q: %w", p, ErrBadPattern)
			}
			a.suffixes = append(a.suffixes, "."+host)
			continue
		}
		host, ok := NormalizeHost(p)
		if !ok {
			return nil, fmt.Errorf("%q: %w", p, ErrBadPattern)
		}
		a.exact[host] = true
	}
	return a, nil
}

// Empty reports whether the list allows no host at all.
func (a *AllowList) Empty() bool {
	return a == nil || (len(a.exact) == 0 && len(a.suffixes) == 0)
}

// Allows reports whether host (a URL's Hostname()) is on the list.
func (a *AllowList) Allows(host string) bool {
	if a.Empty() {
		return false
	}
	h, ok := NormalizeHost(host)
	if !ok {
		return false
	}
	if a.exact[h] {
		return true
	}
	if isIP(h) {
		return false // IP literals match exact entries only
	}
	for _, s := range a.suffixes {
		if len(h) > len(s) && strings.HasSuffix(h, s) {
			return true
		}
	}
	return false
}

// NormalizeHost lower-cases a host name, drops one trailing dot and
// canonicalises IP literals. It reports false for anything that is neither
// a valid DNS name (letters, digits, '-' and '_' in labels of 1 to 63
// bytes) nor an IP address without a zone.
func NormalizeHost(host string) (string, bool) {
	host = strings.TrimPrefix(strings.TrimSuffix(host, "]"), "[")
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return "", false
		}
		return ip.String(), true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" || len(host) > maxHostLen {
		return "", false
	}
	for label := range strings.SplitSeq(host, ".") {
		if !validLabel(label) {
			return "", false
		}
	}
	return host, true
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func isIP(h string) bool {
	_, err := netip.ParseAddr(h)
	return err == nil
}
