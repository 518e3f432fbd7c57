package server

import (
	"bytes"
	"context"
	"net/http"

	"github.com/raygw/raygw/internal/auth"
	"github.com/raygw/raygw/internal/jobs"
	"github.com/raygw/raygw/internal/openai"
)

// JobExecutor runs async jobs through the gateway's own data path, as the
// tenant that submitted them: every stage applies, but not authentication
// and rate limits, which the job passed when it was submitted.
func (s *Server) JobExecutor() jobs.Executor { return jobExecutor{s} }

// MountJobs registers the job API's routes behind client authentication.
func (s *Server) MountJobs(routes []jobs.Route) {
	for _, rt := range routes {
		s.handle(Route{rt.Pattern, Client, rt.Name}, rt.Handler)
	}
}

type jobExecutor struct{ s *Server }

var _ jobs.Executor = jobExecutor{}

// Execute runs one job request in-process and returns the answer.
func (e jobExecutor) Execute(ctx context.Context, tenant, endpoint string, body []byte) (int, []byte, error) {
	var h func(http.ResponseWriter, *http.Request) error
	switch endpoint {
	case "/v1/chat/completions":
		h = e.s.chat
	case "/v1/completions":
		h = e.s.completions
	default:
		return 0, nil, openai.NotFound("not_found", "no job endpoint %s", endpoint)
	}
	req, err := http.NewRequestWithContext(auth.WithFingerprint(ctx, tenant), http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	rec := &recorder{header: http.Header{}}
	e.s.errorHandler(h).ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.status, rec.body.Bytes(), nil
}

// recorder is an in-memory ResponseWriter for job runs.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
