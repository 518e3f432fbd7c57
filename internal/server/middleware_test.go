package server

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/telemetry"
)

// middlewareServer is a Server with only what the middleware reads.
func middlewareServer(tb testing.TB) *Server {
	tb.Helper()
	l, err := config.Load(config.Options{Flags: map[string]string{"RAY_MODEL_ID": "m"}})
	if err != nil {
		tb.Fatal(err)
	}
	return &Server{cfg: l.Config, metrics: telemetry.NewMetrics(), now: time.Now,
		log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// TestRequestIDContext checks the id in the context is the one echoed in
// X-Request-Id, and that contexts derived from it still follow the
// request's cancellation.
func TestRequestIDContext(t *testing.T) {
	s := middlewareServer(t)
	var seen string
	var derivedDone bool
	h := s.requestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = requestIDFrom(r.Context())
		ctx, cancel := context.WithTimeout(r.Context(), time.Hour)
		defer cancel()
		if _, ok := ctx.Value(http.ServerContextKey).(*http.Server); !ok {
			t.Error("the request's other context values are lost")
		}
		<-ctx.Done() // the parent is cancelled below
		derivedDone = true
	}))
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), http.ServerContextKey, &http.Server{}))
	cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
	id := rec.Header().Get("X-Request-Id")
	if len(id) != 16 || seen != id {
		t.Fatalf("context id %q, header %q", seen, id)
	}
	if !derivedDone {
		t.Fatal("a context derived from the request's was not cancelled with it")
	}
}

// TestInstrumentCountsByCode checks each status code is counted under its
// route, whether or not an outer status recorder wraps the writer.
func TestInstrumentCountsByCode(t *testing.T) {
	for _, outer := range []bool{false, true} {
		t.Run("outer="+strconv.FormatBool(outer), func(t *testing.T) {
			s := middlewareServer(t)
			h := s.instrument("r", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c := r.URL.Query().Get("code"); c != "" {
					n, _ := strconv.Atoi(c)
					w.WriteHeader(n)
				}
				_, _ = io.WriteString(w, "x")
			}))
			for _, q := range []string{"", "", "?code=404", "?code=500", "?code=404"} {
				var w http.ResponseWriter = httptest.NewRecorder()
				if outer {
					w = &statusWriter{ResponseWriter: w}
				}
				h.ServeHTTP(w, httptest.NewRequest("GET", "/"+q, nil))
			}
			for code, want := range map[string]float64{"200": 2, "404": 2, "500": 1} {
				if got := testutil.ToFloat64(s.metrics.Requests.WithLabelValues("r", code)); got != want {
					t.Errorf("code %s counted %v, want %v", code, got, want)
				}
			}
			if n := testutil.CollectAndCount(s.metrics.Requests); n != 3 {
				t.Errorf("%d series, want 3", n)
			}
		})
	}
}

// BenchmarkMiddleware measures the middleware around every request
// (request id, access log, per-route metrics) with a handler that does
// nothing but answer.
func BenchmarkMiddleware(b *testing.B) {
	s := middlewareServer(b)
	h := s.requestID(s.recoverPanics(s.accessLog(s.instrument("r", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	})))))
	req := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, req)
	}
}

type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}
