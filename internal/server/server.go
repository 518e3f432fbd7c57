// Package server owns raygw's HTTP surface: the route table, the middleware
// chain and thin handlers that string the request stages together.
package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/deploy"
	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
	"github.com/raygw/raygw/internal/telemetry"
)

// Access says who may call a route.
type Access int

// Route access classes; every route declares one.
const (
	Public Access = iota + 1 // no credentials (health probes); the zero value is refused
	Client                   // a client API key when auth is on
	Admin                    // an admin key (control plane, dashboard)
)

// Route is one registered pattern with its access class.
type Route struct {
	Pattern string
	Access  Access
	Name    string // metrics label
}

// Backend is the engine a request runs on.
type Backend interface {
	// Client returns the engine client, or an error (503) when none is ready.
	Client() (*openaicompat.Client, error)
	// Ready reports whether the engine answers its health check.
	Ready() bool
	// ContextWindow is the effective per-request context in tokens.
	ContextWindow() int
}

// Deps are the collaborators a Server needs.
type Deps struct {
	Config  *config.Loaded
	Backend Backend
	Stages  *Stages // nil: every stage off
	// Deployments is the control plane; nil serves the gateway's own model only.
	Deployments *deploy.Manager
	Metrics     *telemetry.Metrics
	Logger      *slog.Logger
	Now         func() time.Time
}

// Server is the HTTP surface of one gateway.
type Server struct {
	cfg     *config.Config
	backend Backend
	metrics *telemetry.Metrics
	log     *slog.Logger
	now     func() time.Time
	mux     *http.ServeMux
	routes  []Route
	limits  openai.Limits
	sec     *security
	stages  *Stages
	// depStages are the stages of requests for other deployments;
	// depScheds adds a scheduler per llama.cpp deployment.
	depStages *Stages
	depScheds *schedulers
	deps      *deploy.Manager
	draining  atomic.Bool

	// promptTokens and completionTokens are the Tokens series, looked up once.
	promptTokens, completionTokens prometheus.Counter

	// upstreamModel/clientModel are `"model":"<name>"` byte patterns used to
	// show clients their model name; nil when the names are the same.
	upstreamModel, clientModel []byte
}

// New builds the server and its route table.
func New(d Deps) (*Server, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Metrics == nil {
		d.Metrics = telemetry.NewMetrics()
	}
	s := &Server{cfg: d.Config.Config, backend: d.Backend, metrics: d.Metrics, log: d.Logger.With("component", "server"),
		now: d.Now, mux: http.NewServeMux(), limits: openai.DefaultLimits}
	s.promptTokens = d.Metrics.Tokens.WithLabelValues("prompt")
	s.completionTokens = d.Metrics.Tokens.WithLabelValues("completion")
	s.stages = d.Stages
	s.deps = d.Deployments
	if s.stages == nil {
		s.stages = &Stages{}
	}
	s.depStages = deploymentStages(s.stages)
	s.depScheds = newSchedulers(s.cfg, s.log)
	if err := d.Metrics.Registry.Register(newStageCollector(s.stages)); err != nil {
		return nil, err
	}
	if ref := s.cfg.Model.Ref; ref != "" && ref != s.cfg.Model.ID {
		up, _ := json.Marshal(ref)
		cl, _ := json.Marshal(s.cfg.Model.ID)
		s.upstreamModel = append([]byte(`"model":`), up...)
		s.clientModel = append([]byte(`"model":`), cl...)
	}
	sec, err := newSecurity(d.Config, d.Logger)
	if err != nil {
		return nil, err
	}
	s.sec = sec
	s.handle(Route{"GET /healthz", Public, "healthz"}, http.HandlerFunc(s.healthz))
	s.handle(Route{"GET /readyz", Public, "readyz"}, http.HandlerFunc(s.readyz))
	s.handle(Route{"GET /metrics", Admin, "metrics"}, promhttp.HandlerFor(d.Metrics.Registry, promhttp.HandlerOpts{}))
	s.handle(Route{"GET /v1/models", Client, "models"}, s.errorHandler(s.models))
	s.handle(Route{"POST /v1/chat/completions", Client, "chat"}, s.errorHandler(s.chat))
	s.handle(Route{"POST /v1/completions", Client, "completions"}, s.errorHandler(s.completions))
	s.registerDeployments()
	s.registerDashboard()
	s.mux.Handle("/", s.errorHandler(func(w http.ResponseWriter, r *http.Request) error {
		return openai.NotFound("not_found", "no route for %s %s", r.Method, r.URL.Path)
	}))
	return s, nil
}

// Routes lists the registered routes with their access classes.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// Handler is the root handler with the outer middleware applied.
func (s *Server) Handler() http.Handler {
	return s.requestID(s.recoverPanics(s.accessLog(s.mux)))
}

// SetDraining makes /readyz fail so load balancers stop sending traffic.
func (s *Server) SetDraining() { s.draining.Store(true) }

// handle registers a route behind its security and metrics wrappers.
func (s *Server) handle(rt Route, h http.Handler) {
	s.routes = append(s.routes, rt)
	s.mux.Handle(rt.Pattern, s.instrument(rt.Name, s.sec.wrap(rt, h)))
}

// errorHandler adapts a handler that returns an error to http.Handler.
func (s *Server) errorHandler(f func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			e := openai.AsError(err)
			if e.Status >= 500 {
				s.log.Warn("request failed", "request_id", requestIDFrom(r.Context()), "status", e.Status, "err", e)
			}
			openai.WriteError(w, e)
		}
	})
}
