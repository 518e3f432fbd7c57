package clientip

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFrom(t *testing.T) {
	long := strings.Repeat("9.9.9.9, ", 2000) + "203.0.113.7"
	manyHops := "203.0.113.7," + strings.Repeat("127.0.0.2,", MaxHops+2) + "127.0.0.3"
	tests := []struct {
		name   string
		remote string
		trust  bool
		header map[string][]string
		want   string
	}{
		{"peer only", "198.51.100.1:4000", false, nil, "198.51.100.1"},
		{"untrusted ignores xff", "127.0.0.1:4000", false, map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "127.0.0.1"},
		{"trusted but non-loopback peer ignores xff", "198.51.100.1:4000", true, map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "198.51.100.1"},
		{"trusted loopback peer", "127.0.0.1:4000", true, map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
		{"ipv6 loopback peer", "[::1]:4000", true, map[string][]string{"X-Forwarded-For": {"2001:db8::7"}}, "2001:db8::7"},
		{"rightmost wins over spoofed left", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"1.1.1.1, 203.0.113.7"}}, "203.0.113.7"},
		{"skips loopback hops", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"1.1.1.1, 203.0.113.7, 127.0.0.1, ::1"}}, "203.0.113.7"},
		{"multiple header lines", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"1.1.1.1", "203.0.113.8"}}, "203.0.113.8"},
		{"all loopback", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"127.0.0.2"}}, "127.0.0.2"},
		{"xff with port", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"203.0.113.7:5555"}}, "203.0.113.7"},
		{"xff bracketed v6 port", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"[2001:db8::1]:80"}}, "2001:db8::1"},
		{"mapped v4", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"::ffff:203.0.113.9"}}, "203.0.113.9"},
		{"garbage falls back to peer", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"1.1.1.1, not-an-ip"}}, "127.0.0.1"},
		{"empty hop falls back", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"1.1.1.1,"}}, "127.0.0.1"},
		{"zone rejected", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {"fe80::1%eth0"}}, "127.0.0.1"},
		{"overlong header", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {long}}, "127.0.0.1"},
		{"too many hops", "127.0.0.1:1", true, map[string][]string{"X-Forwarded-For": {manyHops}}, "127.0.0.1"},
		{"forwarded quoted v6", "127.0.0.1:1", true, map[string][]string{"Forwarded": {`for="[::1]:1234", for="[2001:db8:cafe::17]:4711"`}}, "2001:db8:cafe::17"},
		{"forwarded v6 loopback only", "127.0.0.1:1", true, map[string][]string{"Forwarded": {`for="[::1]:1234"`}}, "::1"},
		{"forwarded params", "[::1]:1", true, map[string][]string{"Forwarded": {"for=192.0.2.60;proto=http;by=203.0.113.43"}}, "192.0.2.60"},
		{"forwarded case", "[::1]:1", true, map[string][]string{"Forwarded": {"proto=https;FOR=192.0.2.61"}}, "192.0.2.61"},
		{"forwarded unknown", "[::1]:1", true, map[string][]string{"Forwarded": {"for=unknown"}}, "::1"},
		{"forwarded obfuscated", "[::1]:1", true, map[string][]string{"Forwarded": {"for=_hidden"}}, "::1"},
		{"forwarded without for", "[::1]:1", true, map[string][]string{"Forwarded": {"proto=https"}}, "::1"},
		{"xff beats forwarded", "127.0.0.1:1", true, map[string][]string{"Forwarded": {"for=192.0.2.1"}, "X-Forwarded-For": {"203.0.113.7"}}, "203.0.113.7"},
		{"no port remote", "192.0.2.5", true, nil, "192.0.2.5"},
		{"bad remote", "garbage", true, map[string][]string{"X-Forwarded-For": {"203.0.113.7"}}, "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			for k, vs := range tt.header {
				for _, v := range vs {
					r.Header.Add(k, v)
				}
			}
			if got := From(r, tt.trust).String(); got != tt.want {
				t.Fatalf("From = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseNode(t *testing.T) {
	for _, s := range []string{"", "[", "[::1", "[::1]x", "[::1]:", "1.2.3.4:", "1.2.3.4:abc", "1.2.3.4:1234567", "unknown", strings.Repeat("1", 100)} {
		if a, ok := parseNode(s); ok {
			t.Errorf("parseNode(%q) = %v, want rejection", s, a)
		}
	}
	for s, want := range map[string]string{"[::1]": "::1", "[::1]:80": "::1", "::1": "::1", "1.2.3.4:80": "1.2.3.4"} {
		a, ok := parseNode(s)
		if !ok || a != netip.MustParseAddr(want) {
			t.Errorf("parseNode(%q) = %v %v, want %s", s, a, ok, want)
		}
	}
}
