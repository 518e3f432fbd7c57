package server

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/openaicompat"
)

// TestStreamsReuseEngineConnections: after a stream's [DONE] the rest of
// the engine's answer is read, so sequential streams share one engine
// connection instead of opening one each.
func TestStreamsReuseEngineConnections(t *testing.T) {
	var conns atomic.Int64
	eng := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{`{"choices":[{"index":0,"delta":{"content":"hi"}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
			"[DONE]"} {
			_, _ = io.WriteString(w, "data: "+ev+"\n\n")
			w.(http.Flusher).Flush()
		}
		time.Sleep(5 * time.Millisecond) // the chunked end comes after [DONE], as over a real network
	}))
	eng.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	eng.Start()
	defer eng.Close()
	l, err := config.Load(config.Options{Flags: map[string]string{"RAY_AUTH_ENABLED": "false",
		"RAY_RATE_LIMIT_ENABLED": "false", "RAY_MODEL_ID": "m"}})
	if err != nil {
		t.Fatal(err)
	}
	tr := openaicompat.NewTransport()
	defer tr.CloseIdleConnections()
	// idle hears each engine connection going back to the pool.
	idle := make(chan error, 16)
	traced := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		trace := &httptrace.ClientTrace{PutIdleConn: func(err error) { idle <- err }}
		return tr.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
	})
	srv, err := New(Deps{Config: l, Backend: fixedBackend{openaicompat.New(eng.URL, "", traced)},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	for i := 0; i < 5; i++ {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body)))
		if rec.Code != 200 || !strings.HasSuffix(rec.Body.String(), "data: [DONE]\n\n") {
			t.Fatalf("stream %d: %d %q", i, rec.Code, rec.Body.String())
		}
		select { // the answer's end is read after the client got [DONE]
		case err := <-idle:
			if err != nil {
				t.Fatalf("stream %d: connection not pooled: %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("stream %d: the engine connection never went back to the pool", i)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("5 sequential streams opened %d engine connections, want 1", n)
	}
}

// TestDrainCloseBoundsASilentEngine: an engine that keeps the answer open
// after its end costs at most drainTimeout before the connection closes.
func TestDrainCloseBoundsASilentEngine(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	start := time.Now()
	drainClose(pr)
	if d := time.Since(start); d < drainTimeout || d > 20*drainTimeout {
		t.Fatalf("drainClose took %s", d)
	}
	if _, err := pw.Write([]byte("x")); err == nil {
		t.Fatal("the body was not closed")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
