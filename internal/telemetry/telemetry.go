// Package telemetry owns the gateway's logs and Prometheus metrics: the slog
// logger setup and the registry every stage reports into.
package telemetry

import (
	"io"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewLogger returns a JSON logger at level (debug, info, warn, error) that
// tags every line with the service name.
func NewLogger(w io.Writer, level, service string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})).With("service", service)
}

// Metrics are the gateway's request metrics.
type Metrics struct {
	Registry  *prometheus.Registry
	Requests  *prometheus.CounterVec   // route, code
	Duration  *prometheus.HistogramVec // route
	TTFT      *prometheus.HistogramVec // route
	Inflight  prometheus.Gauge
	Tokens    *prometheus.CounterVec // kind: prompt, completion
	EngineUp  prometheus.Gauge
	Restarts  prometheus.Counter
	SlowTotal prometheus.Counter
}

// NewMetrics registers the gateway metrics (and Go/process collectors) on a
// fresh registry.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	buckets := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	m := &Metrics{
		Registry: r,
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raygw_requests_total",
			Help: "HTTP requests by route and status code."}, []string{"route", "code"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raygw_request_duration_seconds",
			Help: "End-to-end request latency.", Buckets: buckets}, []string{"route"}),
		TTFT: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "raygw_time_to_first_token_seconds",
			Help: "Time from request arrival to the first streamed token.", Buckets: buckets}, []string{"route"}),
		Inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "raygw_inflight_requests",
			Help: "Requests being served."}),
		Tokens: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "raygw_tokens_total",
			Help: "Tokens reported by the engine, by kind (prompt, completion)."}, []string{"kind"}),
		EngineUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: "raygw_engine_up",
			Help: "1 when the model engine answers its health check."}),
		Restarts: prometheus.NewCounter(prometheus.CounterOpts{Name: "raygw_engine_restarts_total",
			Help: "Engine process restarts."}),
		SlowTotal: prometheus.NewCounter(prometheus.CounterOpts{Name: "raygw_slow_requests_total",
			Help: "Requests slower than RAY_TELEMETRY_SLOW_REQUEST_THRESHOLD_MS."}),
	}
	r.MustRegister(m.Requests, m.Duration, m.TTFT, m.Inflight, m.Tokens, m.EngineUp, m.Restarts, m.SlowTotal,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
