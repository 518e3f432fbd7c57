package callback

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// ErrBlockedAddress means a connection would reach a loopback, private,
// link-local, shared (CGNAT), multicast, unspecified or otherwise
// special-purpose address while private networks are not allowed.
var ErrBlockedAddress = errors.New("callback address is not public")

// blockedPrefixes are special-purpose ranges that netip's predicates do not
// cover (RFC 6890 and friends).
var blockedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may embed a private IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds an IPv4 address
}

// Blocked reports whether ip must not be reached by a callback when private
// networks are not allowed. IPv4-mapped IPv6 addresses are judged by the
// IPv4 address they carry.
func Blocked(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return true
	}
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() {
		return true
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Control returns a net.Dialer Control function. It runs after name
// resolution, on the exact address being connected to, so a host name that
// resolves (or re-resolves) to a blocked address is refused. With
// allowPrivate it checks nothing.
func Control(allowPrivate bool) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%s %q: %w", network, address, ErrBlockedAddress)
		}
		if Blocked(ap.Addr()) {
			return fmt.Errorf("%s %s: %w", network, ap.Addr(), ErrBlockedAddress)
		}
		return nil
	}
}
