package callback

import (
	"strings"
	"testing"
)

// FuzzAllowList checks that the host matcher never panics and that a
// match is always an exact entry or a strict subdomain of a *.suffix.
func FuzzAllowList(f *testing.F) {
	f.Add("*.trusted.example", "a.trusted.example")
	f.Add("callback.example", "CALLBACK.EXAMPLE.")
	f.Add("*.trusted.example", "trusted.example")
	f.Add("[::1]", "::1")
	f.Add("*.x", "a..x")
	f.Fuzz(func(t *testing.T, pattern, host string) {
		a, err := NewAllowList([]string{pattern})
		if err != nil {
			return
		}
		if !a.Allows(host) {
			return
		}
		h, ok := NormalizeHost(host)
		if !ok {
			t.Fatalf("Allows(%q) with a host that does not normalise", host)
		}
		if rest, isSuffix := strings.CutPrefix(strings.TrimSpace(pattern), "*."); isSuffix {
			s, _ := NormalizeHost(rest)
			if !strings.HasSuffix(h, "."+s) || h == s {
				t.Fatalf("pattern %q matched %q (normalised %q)", pattern, host, h)
			}
			return
		}
		if p, _ := NormalizeHost(strings.TrimSpace(pattern)); p != h {
			t.Fatalf("exact pattern %q matched %q", pattern, host)
		}
	})
}
