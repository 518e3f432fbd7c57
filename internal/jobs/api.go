package jobs

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/raygw/raygw/internal/auth"
	"github.com/raygw/raygw/internal/openai"
)

// retryAfterSeconds is the Retry-After hint of 429 and 507 answers.
const retryAfterSeconds = 30

// Route is one HTTP route of the jobs API.
type Route struct {
	Pattern string
	Name    string // metrics label
	Handler http.Handler
}

// Routes lists the jobs API. Mount every route behind client
// authentication: the key's fingerprint (auth.FromContext) is the tenant,
// and a job is visible only to its tenant. Without authentication all
// callers share one tenant and rely on the ids being unguessable.
func (q *Queue) Routes() []Route {
	return []Route{
		{"POST /v1/jobs", "jobs_create", q.handle(q.create)},
		{"GET /v1/jobs/{id}", "jobs_get", q.handle(q.get)},
		{"DELETE /v1/jobs/{id}", "jobs_cancel", q.handle(q.cancel)},
	}
}

// Handler serves Routes on its own mux, for mounting as one handler.
func (q *Queue) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range q.Routes() {
		mux.Handle(rt.Pattern, rt.Handler)
	}
	return mux
}

func (q *Queue) handle(f func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			e := httpError(err)
			if e.Status >= 500 {
				q.log.Warn("jobs request failed", "status", e.Status, "err", err)
			}
			openai.WriteError(w, e)
		}
	})
}

// httpError maps the package's sentinels to OpenAI error envelopes.
func httpError(err error) *openai.Error {
	var oe *openai.Error
	switch {
	case errors.As(err, &oe):
		return oe
	case errors.Is(err, ErrNotFound):
		return openai.NotFound("job_not_found", "no such job")
	case errors.Is(err, ErrNotCancelable):
		return &openai.Error{Status: http.StatusConflict, Type: "invalid_request_error", Code: "job_not_cancelable",
			Message: "only a queued job can be canceled", Cause: err}
	case errors.Is(err, ErrQueueFull):
		return &openai.Error{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "job_queue_full",
			Message: "the job queue is full; retry after finished jobs expire", Cause: err,
			Header: http.Header{"Retry-After": {strconv.Itoa(retryAfterSeconds)}}}
	case errors.Is(err, ErrInsufficientStorage):
		return &openai.Error{Status: http.StatusInsufficientStorage, Type: "server_error", Code: "insufficient_storage",
			Message: "the gateway has too little free storage to accept jobs", Cause: err,
			Header: http.Header{"Retry-After": {strconv.Itoa(retryAfterSeconds)}}}
	default:
		return openai.Internal(err)
	}
}

func tenantOf(r *http.Request) string {
	t, _ := auth.FromContext(r.Context())
	return t
}

// create is POST /v1/jobs: 202 with the job once it is stored.
func (q *Queue) create(w http.ResponseWriter, r *http.Request) error {
	raw, err := q.readBody(w, r)
	if err != nil {
		return err
	}
	sub, err := DecodeSubmission(raw, *q.opts.Limits, q.policy)
	if err != nil {
		return err
	}
	j, err := q.Submit(r.Context(), tenantOf(r), sub)
	if err != nil {
		return err
	}
	q.log.Info("job accepted", "job", j.ID, "tenant", j.Tenant, "endpoint", j.Endpoint,
		"callback", j.CallbackURL != "")
	v := j.View(true)
	v.CallbackSecret = j.CallbackSecret
	w.Header().Set("Location", "/v1/jobs/"+j.ID)
	writeJSON(w, http.StatusAccepted, v)
	return nil
}

// get is GET /v1/jobs/{id}: the job, with its result when done.
func (q *Queue) get(w http.ResponseWriter, r *http.Request) error {
	j, err := q.Get(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, j.View(true))
	return nil
}

// cancel is DELETE /v1/jobs/{id}: 200 with the canceled job, 409 when it
// is no longer queued.
func (q *Queue) cancel(w http.ResponseWriter, r *http.Request) error {
	j, err := q.Cancel(r.Context(), tenantOf(r), r.PathValue("id"))
	if errors.Is(err, ErrNotCancelable) && j != nil {
		e := httpError(err)
		e.Message = "job " + j.ID + " is " + string(j.Status) + "; only a queued job can be canceled"
		return e
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, j.View(true))
	return nil
}

// readBody reads a JSON body within MaxBodyBytes (413 past it).
func (q *Queue) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, &openai.Error{Status: http.StatusUnsupportedMediaType, Type: "invalid_request_error",
				Message: "Content-Type must be application/json"}
		}
	}
	limit := q.opts.MaxBodyBytes
	tooLarge := openai.TooLarge("request_too_large", "request body is larger than the %d-byte limit", limit)
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge
		}
		return nil, openai.BadRequest("", "the request body could not be read")
	}
	return body, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		slog.Default().Debug("write job answer", "component", "jobs", "err", err)
	}
}
