// Package single is the backend of `raygw serve`: one engine, either a
// llama-server that raygw supervises (managed) or one already running at a
// URL (external). It tracks readiness and the engine's real per-slot
// context size.
package single

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
)

// Engine is one engine behind the gateway.
type Engine struct {
	client     *openaicompat.Client
	aux        *openaicompat.Client // health, /props and warm-up
	configured int                  // RAY_MODEL_CONTEXT_WINDOW
	strict     bool                 // refuse requests while not ready (managed mode)
	log        *slog.Logger
	ready      atomic.Bool
	window     atomic.Int64
}

// New returns an engine reached through client. In strict mode requests are
// refused with 503 until the engine is ready; otherwise they are tried.
// aux carries the short calls (health, /props, warm-up) on connections of
// their own.
func New(client, aux *openaicompat.Client, contextWindow int, strict bool, log *slog.Logger) *Engine {
	e := &Engine{client: client, aux: aux, configured: contextWindow, strict: strict, log: log.With("component", "engine")}
	e.window.Store(int64(contextWindow))
	return e
}

// Client returns the engine client, or 503 while a managed engine starts.
func (e *Engine) Client() (*openaicompat.Client, error) {
	if e.strict && !e.ready.Load() {
		return nil, openai.Unavailable(2, nil, "the model engine is starting; retry shortly")
	}
	return e.client, nil
}

// Ready reports whether the last health check passed.
func (e *Engine) Ready() bool { return e.ready.Load() }

// ContextWindow is the smaller of the configured window and the engine's
// per-slot context.
func (e *Engine) ContextWindow() int { return int(e.window.Load()) }

// SetReady records a health transition; on becoming ready it reads the
// engine's per-slot context size from /props.
func (e *Engine) SetReady(ctx context.Context, ok bool) {
	was := e.ready.Swap(ok)
	if ok && !was {
		e.refreshWindow(ctx)
	}
}

func (e *Engine) refreshWindow(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var props struct {
		Default struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := e.aux.Get(ctx, "/props", &props); err != nil || props.Default.NCtx <= 0 {
		return // not llama.cpp, or an old build: keep the configured window
	}
	w := min(e.configured, props.Default.NCtx)
	e.window.Store(int64(w))
	e.log.Info("engine context", "per_slot_ctx", props.Default.NCtx, "effective_window", w)
}

// Warm sends one tiny completion so the first real request does not pay for
// cold caches.
func (e *Engine) Warm(ctx context.Context, model string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": "Hello", "max_tokens": 1, "temperature": 0})
	resp, err := e.aux.Post(ctx, "/v1/completions", body)
	if err != nil {
		e.log.Warn("warm-up failed", "err", err)
		return
	}
	resp.Body.Close()
	e.log.Info("engine warmed")
}

// Probe polls /health every interval until ctx is done (external mode).
func (e *Engine) Probe(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		var h map[string]any
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := e.aux.Get(pctx, "/health", &h)
		cancel()
		e.SetReady(ctx, err == nil)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
