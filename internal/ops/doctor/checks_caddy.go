package doctor

import (
	"net"
	"net/netip"
	"strings"

	"github.com/raygw/raygw/internal/ops/render"
)

func checkCaddy(e *Env) Result {
	p, err := e.caddyPath()
	if err != nil {
		return fail("apt-get install caddy, or set RAY_DEPLOY_CADDY_BINARY / --caddy-binary", "%v", err)
	}
	out, err := e.Run(e.Ctx, e.Timeout, []string{e.Host.Path(p), "version"})
	if err != nil {
		return fail("reinstall caddy", "%s does not run: %v", p, err)
	}
	return ok("%s %s", p, firstLine(string(out)))
}

func checkCaddyfile(e *Env) Result {
	text, err := render.Caddyfile(e.Config.Config)
	if err != nil {
		return fail("set RAY_DEPLOY_PUBLIC_SITE", "%v", err)
	}
	p, err := e.caddyPath()
	if err != nil {
		return fail("install caddy so the generated Caddyfile can be validated", "generated Caddyfile not validated: %v", err)
	}
	if err := render.ValidateCaddyfile(e.Host.Path(p), text); err != nil {
		return fail("correct RAY_DEPLOY_PUBLIC_SITE / RAY_HOST / RAY_PORT", "generated Caddyfile is invalid: %v", err)
	}
	return ok("generated Caddyfile for %s passes caddy validate", e.Config.Deploy.PublicSite)
}

// placeholderSuffixes are reserved or documentation names that no public
// certificate can be issued for.
var placeholderSuffixes = []string{"example.com", "example.net", "example.org", ".example", ".test", ".invalid", ".localhost", ".local", ".internal"}

func checkPublicSite(e *Env) Result {
	site := strings.TrimSpace(e.Config.Deploy.PublicSite)
	fix := "set RAY_DEPLOY_PUBLIC_SITE to the public DNS name that points at this host"
	var notes []string
	httpOnly := strings.HasPrefix(site, "http://") || strings.HasSuffix(site, ":80")
	addr := strings.TrimPrefix(strings.TrimPrefix(site, "https://"), "http://")
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	host = strings.Trim(strings.ToLower(host), "[]")
	if host == "" || host == "localhost" || isPlaceholder(host) {
		notes = append(notes, "is a local or documentation placeholder")
	} else if ip, err := netip.ParseAddr(host); err == nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified()) {
		notes = append(notes, "is a local address")
	}
	if httpOnly {
		notes = append(notes, "is HTTP-only, so API keys would cross the network unencrypted")
		fix = "drop the http:// scheme or :80 port so Caddy serves HTTPS"
	}
	if len(notes) > 0 {
		return warn(fix, "public site %q %s", site, strings.Join(notes, " and "))
	}
	return ok("public site %s (HTTPS by Caddy)", site)
}

func isPlaceholder(host string) bool {
	for _, s := range placeholderSuffixes {
		if host == strings.TrimPrefix(s, ".") || strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

func checkUpstream(e *Env) Result {
	up := render.UpstreamAddr(e.Config.Config)
	host := strings.Trim(e.Config.Host, "[]")
	if host == "localhost" {
		return ok("Caddy proxies to %s (loopback)", up)
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case err == nil && ip.IsLoopback():
		return ok("Caddy proxies to %s (loopback RAY_HOST %s)", up, e.Config.Host)
	case err == nil && ip.IsUnspecified():
		return warn("set RAY_HOST=127.0.0.1 (or ::1) so only Caddy reaches the gateway",
			"RAY_HOST=%s listens on every interface: clients can bypass Caddy; Caddy proxies to %s", e.Config.Host, up)
	}
	return warn("set RAY_HOST=127.0.0.1 (or ::1) so only Caddy reaches the gateway",
		"RAY_HOST=%s is not loopback: Caddy proxies to %s over the network", e.Config.Host, up)
}

func checkCaddyStorage(e *Env) Result {
	const dir = "/var/lib/caddy"
	if !e.Host.Exists(dir) {
		return ok("%s not present yet; Caddy state headroom skipped", dir)
	}
	return e.headroom("Caddy state", dir, e.Config.Deploy.MinFreeStorageMiB)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
