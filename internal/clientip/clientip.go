// Package clientip owns the answer to "which address is this client?": the
// direct TCP peer, or — only when proxy headers are trusted and the peer is a
// proxy on this host (loopback) — the right-most forwarded hop that is not
// itself loopback. Headers from any other peer are never believed.
package clientip

import (
	"net/http"
	"net/netip"
	"strings"
)

// Bounds on how much of a forwarding header is examined. A trusted proxy
// appends the real client at the right, so only the tail matters.
const (
	// MaxHops is the most comma-separated hops examined, from the right.
	MaxHops = 16
	// MaxHeaderBytes is the most bytes of one forwarding header examined.
	MaxHeaderBytes = 4 << 10
)

// From returns the client address of r. With trustProxy off, or when the
// direct peer is not loopback, it is the peer itself. Otherwise it is the
// right-most X-Forwarded-For hop that is not loopback (Forwarded "for=" is
// read only when no X-Forwarded-For is present). Garbage in the header never
// wins: an unparseable hop makes From fall back to the peer. The zero Addr
// means RemoteAddr itself was unparseable.
func From(r *http.Request, trustProxy bool) netip.Addr {
	peer := Peer(r)
	if !trustProxy || !peer.IsValid() || !peer.IsLoopback() {
		return peer
	}
	if vals := r.Header.Values("X-Forwarded-For"); len(vals) > 0 {
		return rightmost(vals, peer, xffHop)
	}
	if vals := r.Header.Values("Forwarded"); len(vals) > 0 {
		return rightmost(vals, peer, forwardedHop)
	}
	return peer
}

// Peer returns the direct TCP peer of r (IPv4-mapped IPv6 unmapped), or the
// zero Addr when RemoteAddr is not an address.
func Peer(r *http.Request) netip.Addr {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	a, _ := parseNode(r.RemoteAddr)
	return a
}

// rightmost walks the hops of the header lines vals from the right, skipping
// loopback hops (proxies on this host), and returns the first other hop. It
// returns the peer when a hop is garbage or the walk runs past its bounds, and
// the left-most loopback hop seen when every hop is loopback.
func rightmost(vals []string, peer netip.Addr, parse func(string) (netip.Addr, bool)) netip.Addr {
	last := peer
	hops := 0
	for i := len(vals) - 1; i >= 0; i-- {
		v := vals[i]
		if len(v) > MaxHeaderBytes {
			return peer
		}
		for v != "" {
			hops++
			if hops > MaxHops {
				return peer
			}
			var hop string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				hop, v = v[j+1:], v[:j]
			} else {
				hop, v = v, ""
			}
			a, ok := parse(strings.TrimSpace(hop))
			if !ok {
				return peer
			}
			if !a.IsLoopback() {
				return a
			}
			last = a
		}
	}
	return last
}

// xffHop parses one X-Forwarded-For element: an address, optionally with a
// port ("192.0.2.1:80", "[2001:db8::1]:80").
func xffHop(s string) (netip.Addr, bool) { return parseNode(s) }

// forwardedHop parses one RFC 7239 forwarded-element and returns its "for"
// node: for=192.0.2.60;proto=https or for="[2001:db8::17]:4711".
func forwardedHop(s string) (netip.Addr, bool) {
	for pair := range strings.SplitSeq(s, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "for") {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		return parseNode(v)
	}
	return netip.Addr{}, false
}

// parseNode parses an address with an optional port: "1.2.3.4",
// "1.2.3.4:5", "::1", "[::1]", "[::1]:5". Zones are dropped, IPv4-mapped IPv6
// is unmapped; "unknown", obfuscated identifiers and garbage are rejected.
func parseNode(s string) (netip.Addr, bool) {
	if s == "" || len(s) > 64 {
		return netip.Addr{}, false
	}
	host := s
	switch {
	case s[0] == '[':
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host = s[1:end]
		if rest := s[end+1:]; rest != "" && !validPort(rest) {
			return netip.Addr{}, false
		}
	case strings.Count(s, ":") == 1:
		h, port, _ := strings.Cut(s, ":")
		if !validPort(":" + port) {
			return netip.Addr{}, false
		}
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a.Unmap(), true
}

func validPort(s string) bool {
	if len(s) < 2 || len(s) > 6 || s[0] != ':' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
