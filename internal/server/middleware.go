package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/raygw/raygw/internal/openai"
)

type ctxKey int

const requestIDKey ctxKey = iota

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

// idContext carries the request id as context.WithValue would, boxing it
// only when looked up (logs) rather than for every request.
type idContext struct {
	context.Context
	id string
}

func (c *idContext) Value(key any) any {
	if k, ok := key.(ctxKey); ok && k == requestIDKey {
		return c.id
	}
	return c.Context.Value(key)
}

// requestID gives every request an id, echoed in X-Request-Id.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		var hx [16]byte
		hex.Encode(hx[:], b[:])
		id := string(hx[:])
		w.Header()["X-Request-Id"] = []string{id} // canonical already
		next.ServeHTTP(w, r.WithContext(&idContext{Context: r.Context(), id: id}))
	})
}

// recoverPanics turns a handler panic into a logged 500.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic", "request_id", requestIDFrom(r.Context()), "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				openai.WriteError(w, openai.Internal(fmt.Errorf("panic: %v", v)))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// statusWriter records the status code and keeps Flush working.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// accessLog logs requests slower than the slow-request threshold and every
// error at debug level; nothing secret is logged.
func (s *Server) accessLog(next http.Handler) http.Handler {
	slow := time.Duration(s.cfg.Telemetry.SlowRequestThresholdMS) * time.Millisecond
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		d := s.now().Sub(start)
		if slow > 0 && d >= slow {
			s.metrics.SlowTotal.Inc()
			s.log.Info("slow request", "request_id", requestIDFrom(r.Context()), "method", r.Method, "path", r.URL.Path,
				"status", sw.status, "duration_ms", d.Milliseconds())
		} else if s.log.Enabled(r.Context(), slog.LevelDebug) { // spares boxing the arguments
			s.log.Debug("request", "request_id", requestIDFrom(r.Context()), "method", r.Method, "path", r.URL.Path,
				"status", sw.status, "duration_ms", d.Milliseconds())
		}
	})
}

// instrument records per-route counts, latency and in-flight requests.
func (s *Server) instrument(route string, next http.Handler) http.Handler {
	dur := s.metrics.Duration.WithLabelValues(route)
	codes := &codeCounters{vec: s.metrics.Requests, route: route}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		s.metrics.Inflight.Inc()
		sw, outer := w.(*statusWriter)
		if !outer || sw.status != 0 {
			sw = &statusWriter{ResponseWriter: w}
		}
		defer func() {
			s.metrics.Inflight.Dec()
			code := sw.status
			if code == 0 {
				code = http.StatusOK
			}
			codes.get(code).Inc()
			dur.Observe(s.now().Sub(start).Seconds())
		}()
		next.ServeHTTP(sw, r)
	})
}

// codeCounters caches one route's request counters by status code, so a
// request does not hash its labels; a series appears at its first request.
type codeCounters struct {
	vec   *prometheus.CounterVec
	route string
	mu    sync.RWMutex
	m     map[int]prometheus.Counter
}

func (c *codeCounters) get(code int) prometheus.Counter {
	c.mu.RLock()
	ctr, ok := c.m[code]
	c.mu.RUnlock()
	if ok {
		return ctr
	}
	ctr = c.vec.WithLabelValues(c.route, strconv.Itoa(code))
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[int]prometheus.Counter)
	}
	c.m[code] = ctr // at most one per status code: bounded
	c.mu.Unlock()
	return ctr
}
