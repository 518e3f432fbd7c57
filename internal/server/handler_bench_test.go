package server

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/raygw/raygw/internal/bench/upstream"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
)

type fixedBackend struct{ c *openaicompat.Client }

func (b fixedBackend) Client() (*openaicompat.Client, error) { return b.c, nil }
func (b fixedBackend) Ready() bool                           { return true }
func (b fixedBackend) ContextWindow() int                    { return 8192 }

var _ Backend = fixedBackend{}

// benchGateway returns the gateway's handler in front of an in-process
// fake engine that answers 16 tokens with no latency, with or without the
// pipeline stages of the default configuration.
func benchGateway(b *testing.B, stages bool) http.Handler {
	b.Helper()
	up := httptest.NewServer(upstream.New(upstream.Options{Tokens: 16}))
	b.Cleanup(up.Close)
	l, err := config.Load(config.Options{Flags: map[string]string{"RAY_AUTH_ENABLED": "false",
		"RAY_RATE_LIMIT_ENABLED": "false", "RAY_MODEL_ID": "m", "RAY_SCHEDULER_CONCURRENCY": "64",
		"RAY_SCHEDULER_BATCH_WINDOW_MS": "0"}})
	if err != nil {
		b.Fatal(err)
	}
	tr := openaicompat.NewTransport()
	b.Cleanup(tr.CloseIdleConnections)
	var st *Stages
	if stages {
		if st, err = NewStages(l.Config, "", &http.Client{Transport: tr}); err != nil {
			b.Fatal(err)
		}
	}
	srv, err := New(Deps{Config: l, Backend: fixedBackend{openaicompat.New(up.URL, "", tr)}, Stages: st,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	return srv.Handler()
}

// runChat sends body to h from parallel clients, b.N times in all, and
// checks every answer with ok.
func runChat(b *testing.B, h http.Handler, body []byte, ok func(*httptest.ResponseRecorder) bool) {
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("POST", "/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 || !ok(rec) {
				b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
			}
		}
	})
}

func stageNames(b *testing.B, run func(b *testing.B, stages bool)) {
	for _, stages := range []bool{false, true} {
		name := "bare"
		if stages {
			name = "stages"
		}
		b.Run(name, func(b *testing.B) { run(b, stages) })
	}
}

// BenchmarkChatThroughGateway measures the whole gateway path of one
// non-streaming chat request (middleware, decode, pipeline stages, relay)
// against an in-process upstream with no latency. The allocations include
// the fake engine's (about 44) and the test harness's own (about 16).
func BenchmarkChatThroughGateway(b *testing.B) {
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"You write short emails."},{"role":"user","content":"Tell Sam the meeting moved to 3pm."}],"max_tokens":16}`)
	stageNames(b, func(b *testing.B, stages bool) {
		runChat(b, benchGateway(b, stages), body, func(*httptest.ResponseRecorder) bool { return true })
	})
}

// BenchmarkChatStreamThroughGateway is BenchmarkChatThroughGateway for a
// streaming request: 16 token events, a usage event and [DONE] relayed as
// SSE.
func BenchmarkChatStreamThroughGateway(b *testing.B) {
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"You write short emails."},{"role":"user","content":"Tell Sam the meeting moved to 3pm."}],"max_tokens":16,"stream":true,"stream_options":{"include_usage":true}}`)
	stageNames(b, func(b *testing.B, stages bool) {
		runChat(b, benchGateway(b, stages), body, func(rec *httptest.ResponseRecorder) bool {
			return bytes.HasSuffix(rec.Body.Bytes(), []byte("data: [DONE]\n\n"))
		})
	})
}

var _ = openai.Done
