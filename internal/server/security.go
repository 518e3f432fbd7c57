package server

// security.go is owned by the security helper: it decides, per route access
// class, which credentials and limits apply.
//
//	Public  nothing (health probes)
//	Client  client key (RAY_API_KEYS, when RAY_AUTH_ENABLED) -> rate limit (RAY_RATE_LIMIT_*)
//	Admin   admin key (RAY_ADMIN_API_KEYS); with none configured every admin
//	        request is refused (fail closed)
//
// Any other Access value is refused with 403, so a route cannot be opened by
// an access class this file does not know.

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/raygw/raygw/internal/auth"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/openai"
	"github.com/raygw/raygw/internal/ratelimit"
)

type security struct {
	clients *auth.Authenticator // nil when client auth is off
	admins  *auth.Authenticator // never nil; empty refuses everything
	limiter *ratelimit.Limiter  // nil when rate limiting is off
	key     ratelimit.KeyFunc
	log     *slog.Logger
}

func newSecurity(cfg *config.Loaded, log *slog.Logger) (*security, error) {
	sec := &security{log: log.With("component", "security")}
	var err error
	if cfg.Auth.Enabled {
		if sec.clients, err = auth.New(cfg.Auth.APIKeys); err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Auth.APIKeyEnv, err)
		}
	}
	if sec.admins, err = auth.New(cfg.Admin.APIKeys); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Admin.APIKeyEnv, err)
	}
	if sec.limiter, sec.key, err = ratelimit.FromConfig(cfg.RateLimit, nil); err != nil {
		return nil, err
	}
	sec.log.Info("security",
		"client_auth", cfg.Auth.Enabled, "client_keys", fingerprints(sec.clients),
		"admin_keys", sec.admins.Fingerprints(),
		"rate_limit", cfg.RateLimit.Enabled, "rate_limit_strategy", cfg.RateLimit.KeyStrategy,
		"trust_proxy_headers", cfg.RateLimit.TrustProxyHeaders)
	if sec.admins.Len() == 0 {
		sec.log.Warn("no admin keys configured: admin routes (/metrics, control plane) refuse every request", "variable", cfg.Admin.APIKeyEnv)
	}
	return sec, nil
}

func fingerprints(a *auth.Authenticator) []string {
	if a == nil {
		return nil
	}
	return a.Fingerprints()
}

// wrap applies the route's authentication and rate limits.
func (sec *security) wrap(rt Route, next http.Handler) http.Handler {
	switch rt.Access {
	case Public:
		return next
	case Client:
		h := next
		if sec.limiter != nil {
			h = sec.limiter.Middleware(sec.key, h)
		}
		if sec.clients != nil {
			h = sec.clients.Middleware(h)
		}
		return h
	case Admin:
		return sec.admins.Middleware(next)
	}
	sec.log.Error("route has an unknown access class; refusing all requests to it", "pattern", rt.Pattern, "access", int(rt.Access))
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		openai.WriteError(w, &openai.Error{Status: http.StatusForbidden, Type: "invalid_request_error", Code: "forbidden",
			Message: "This endpoint is not available."})
	})
}

// ReloadKeys swaps the client and admin keys for those in c without a
// restart (meant for SIGHUP). Turning auth or rate limiting on or off still
// needs a restart. On error no key set changes.
func (s *Server) ReloadKeys(c *config.Config) error {
	if s.sec.clients != nil && len(c.Auth.APIKeys) == 0 {
		return fmt.Errorf("%s: refusing to reload an empty client key list", c.Auth.APIKeyEnv)
	}
	// Validate both before swapping either.
	if _, err := auth.New(c.Auth.APIKeys); err != nil {
		return fmt.Errorf("%s: %w", c.Auth.APIKeyEnv, err)
	}
	if _, err := auth.New(c.Admin.APIKeys); err != nil {
		return fmt.Errorf("%s: %w", c.Admin.APIKeyEnv, err)
	}
	if s.sec.clients != nil {
		_ = s.sec.clients.Reload(c.Auth.APIKeys)
	}
	_ = s.sec.admins.Reload(c.Admin.APIKeys)
	s.sec.log.Info("keys reloaded", "client_keys", fingerprints(s.sec.clients), "admin_keys", s.sec.admins.Fingerprints())
	return nil
}
