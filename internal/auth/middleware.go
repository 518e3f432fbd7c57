package auth

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/raygw/raygw/internal/openai"
)

// Realm is the realm named in WWW-Authenticate challenges.
const Realm = "raygw"

// Middleware lets a request through to next only with a valid key; the
// key's fingerprint is then in the request context (FromContext). Anything
// else is answered 401 with the OpenAI error envelope and a Bearer challenge.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	log := slog.Default().With("component", "auth")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fp, err := a.Authenticate(r)
		if err != nil {
			log.Debug("request rejected", "reason", err.Error(), "method", r.Method, "path", r.URL.Path)
			openai.WriteError(w, Unauthorized(err))
			return
		}
		next.ServeHTTP(w, r.WithContext(WithFingerprint(r.Context(), fp)))
	})
}

// Unauthorized is the 401 answer for an Authenticate error: the OpenAI
// envelope with code invalid_api_key and a WWW-Authenticate challenge. The
// message tells a client what to fix without saying anything about the keys.
func Unauthorized(err error) *openai.Error {
	challenge := `Bearer realm="` + Realm + `"`
	msg := "Invalid API key."
	switch {
	case errors.Is(err, ErrMissing):
		msg = "Missing API key: send it as Authorization: Bearer <key>."
	case errors.Is(err, ErrMalformed):
		msg = "Malformed Authorization header: expected one header of the form Bearer <key>."
		challenge += `, error="invalid_request"`
	case errors.Is(err, ErrNoKeys):
		msg = "No API keys are configured for this endpoint."
	default:
		challenge += `, error="invalid_token"`
	}
	return &openai.Error{
		Status:  http.StatusUnauthorized,
		Type:    "authentication_error",
		Code:    "invalid_api_key",
		Message: msg,
		Header:  http.Header{"Www-Authenticate": {challenge}},
		Cause:   err,
	}
}
