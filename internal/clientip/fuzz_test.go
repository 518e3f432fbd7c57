package clientip

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzFrom feeds arbitrary forwarding headers from a trusted loopback peer.
// From must not panic and must answer either the peer or an address that
// appears in the header.
func FuzzFrom(f *testing.F) {
	for _, s := range []string{"203.0.113.7", "1.1.1.1, 2.2.2.2", `for="[::1]:1234"`, "for=1.2.3.4;proto=http", "[2001:db8::1]:80", ",,,", `for="`} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, xff, fwd string) {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "127.0.0.1:9"
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		r.Header.Set("Forwarded", fwd)
		a := From(r, true)
		if !a.IsValid() {
			t.Fatalf("From returned an invalid address for xff=%q fwd=%q", xff, fwd)
		}
		if a.Zone() != "" || a.Is4In6() {
			t.Fatalf("From returned %v with a zone or mapped form", a)
		}
	})
}
