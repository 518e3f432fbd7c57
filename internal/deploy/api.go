package deploy

import (
	"errors"
	"io"
	"net/http"

	"github.com/raygw/raygw/internal/openai"
)

// maxSpecBytes bounds a control-plane request body.
const maxSpecBytes = 1 << 20

// Route is one HTTP route the deployments package serves; the server
// registers it with an access class (Admin for the API, Client for data).
type Route struct {
	Pattern string
	Name    string // metrics label
	Handler http.Handler
}

// API is the REST control plane under /api/v1/deployments.
type API struct{ M *Manager }

// Routes lists the control-plane routes (all need an admin key).
func (a API) Routes() []Route {
	return []Route{
		{"POST /api/v1/deployments", "deployments_create", handle(a.create)},
		{"GET /api/v1/deployments", "deployments_list", handle(a.list)},
		{"GET /api/v1/deployments/{name}", "deployments_get", handle(a.get)},
		{"PATCH /api/v1/deployments/{name}", "deployments_update", handle(a.update)},
		{"DELETE /api/v1/deployments/{name}", "deployments_delete", handle(a.delete)},
		{"GET /api/v1/deployments/{name}/metrics", "deployments_metrics", handle(a.metrics)},
	}
}

// handle adapts an error-returning handler and renders errors as JSON.
func handle(f func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			openai.WriteError(w, apiError(err))
		}
	})
}

// apiError maps control-plane errors to HTTP errors naming the field.
func apiError(err error) error {
	var ve ValidationError
	switch {
	case errors.As(err, &ve):
		e := openai.BadRequest(ve[0].Field, "%s", ve.Error())
		e.Code = "invalid_deployment"
		return e
	case errors.Is(err, ErrNotFound):
		return openai.NotFound("deployment_not_found", "%v", err)
	case errors.Is(err, ErrExists), errors.Is(err, ErrConflict):
		return &openai.Error{Status: http.StatusConflict, Type: "invalid_request_error", Code: "conflict", Message: err.Error()}
	}
	var oe *openai.Error
	if errors.As(err, &oe) {
		return oe
	}
	return openai.Internal(err)
}

func readSpecBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSpecBytes))
	if err != nil {
		return nil, openai.TooLarge("request_too_large", "the body must be a JSON object under %d bytes", maxSpecBytes)
	}
	return b, nil
}

// withEndpoint makes the endpoint an absolute URL on the host the caller used.
func withEndpoint(r *http.Request, s Status) Status {
	if s.Endpoint != "" {
		scheme := "http"
		if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
			scheme = "https"
		}
		s.Endpoint = scheme + "://" + r.Host + s.Endpoint
	}
	return s
}

func (a API) create(w http.ResponseWriter, r *http.Request) error {
	b, err := readSpecBody(w, r)
	if err != nil {
		return err
	}
	spec, err := DecodeSpec(b)
	if err != nil {
		return err
	}
	st, err := a.M.Create(r.Context(), spec)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/v1/deployments/"+st.Name)
	writeJSON(w, http.StatusCreated, withEndpoint(r, st))
	return nil
}

func (a API) list(w http.ResponseWriter, r *http.Request) error {
	all := a.M.List()
	for i := range all {
		all[i] = withEndpoint(r, all[i])
	}
	writeJSON(w, http.StatusOK, map[string]any{"deployments": all})
	return nil
}

func (a API) get(w http.ResponseWriter, r *http.Request) error {
	st, err := a.M.Get(r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, withEndpoint(r, st))
	return nil
}

func (a API) update(w http.ResponseWriter, r *http.Request) error {
	b, err := readSpecBody(w, r)
	if err != nil {
		return err
	}
	st, err := a.M.Update(r.Context(), r.PathValue("name"), b)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, withEndpoint(r, st))
	return nil
}

func (a API) delete(w http.ResponseWriter, r *http.Request) error {
	st, err := a.M.Delete(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, withEndpoint(r, st))
	return nil
}

func (a API) metrics(w http.ResponseWriter, r *http.Request) error {
	m, err := a.M.Metrics(r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}
