// Package dedupe owns in-flight deduplication: identical deterministic
// requests that arrive while one of them runs share that one run. The first
// caller starts the run; later callers follow it. Streaming followers get the
// same events: a late joiner first gets every event so far, then the live ones.
//
// The run belongs to the group, not to any one caller: a caller that leaves
// (client disconnect) never cancels it while someone else still waits, and
// the run is cancelled as soon as the last waiter has left (see design.md).
//
// The handler calls it after a response-cache miss and before admission, so
// followers take no scheduler place; the run acquires the admission ticket:
//
//	dd := dedupe.FromConfig[Answer](cfg) // once; nil when RAY_SCHEDULER_DEDUPE_INFLIGHT=false
//	key, ok := respcache.ChatKey(respcache.InputParams, tenant, req) // deterministic requests only
//	w, leader := dd.Join(r.Context(), string(key[:]), func(ctx context.Context, emit func([]byte)) (Answer, error) {
//		t, err := sched.Acquire(ctx, job) ...; defer t.Release()
//		... call the engine with ctx; emit(payload) for each SSE data payload ...
//	})
//	defer w.Leave()
//	for { ev, err := w.Next(r.Context()); if err != nil { break }; sse.Data(ev) } // streams (io.EOF at end)
//	ans, err := w.Result(r.Context())
//
// A nil *Group is valid and runs every call alone. Events passed to emit are
// copied; events from Next are shared and must not be modified.
package dedupe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/raygw/raygw/internal/config"
)

// ErrPanic wraps a panic recovered from a run.
var ErrPanic = errors.New("dedupe: run panicked")

// RunFunc does the work once for every waiter. ctx ends when every waiter
// has left; emit publishes one stream event to all of them.
type RunFunc[T any] func(ctx context.Context, emit func(event []byte)) (T, error)

// Options configures a Group.
type Options struct {
	Logger *slog.Logger // nil: slog.Default()
}

// Stats counts joins and runs.
type Stats struct {
	Leaders   uint64 // runs started
	Followers uint64 // joins that shared a run
	Canceled  uint64 // runs cancelled because every waiter left
	InFlight  int    // runs now in the group
}

// Group shares in-flight runs by key. It is safe for concurrent use.
type Group[T any] struct {
	log   *slog.Logger
	mu    sync.Mutex
	calls map[string]*call[T]
	st    Stats
}

// FromConfig returns a group when RAY_SCHEDULER_DEDUPE_INFLIGHT is on, else
// nil (every call runs alone).
func FromConfig[T any](cfg *config.Config) *Group[T] {
	if !cfg.Scheduler.DedupeInflight {
		return nil
	}
	return New[T](Options{})
}

// New returns an empty group.
func New[T any](opts Options) *Group[T] {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Group[T]{log: opts.Logger.With("component", "dedupe"), calls: map[string]*call[T]{}}
}

type call[T any] struct {
	key     string
	cancel  context.CancelFunc
	mu      sync.Mutex
	events  [][]byte
	changed chan struct{} // closed and replaced on every event and at the end
	done    bool
	res     T
	err     error
	waiters int
}

// Join makes the caller a waiter of the run for key, starting run when none
// is in flight; leader reports whether this call started it. ctx supplies the
// run's values (not its cancellation) when leading, and its end makes the
// caller leave. Always call Leave on the returned waiter.
func (g *Group[T]) Join(ctx context.Context, key string, run RunFunc[T]) (w *Waiter[T], leader bool) {
	if g == nil {
		g = New[T](Options{}) // a private group: the caller runs alone
	}
	g.mu.Lock()
	c, ok := g.calls[key]
	if ok {
		c.mu.Lock()
		c.waiters++
		c.mu.Unlock()
		g.st.Followers++
	} else {
		runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &call[T]{key: key, cancel: cancel, changed: make(chan struct{}), waiters: 1}
		g.calls[key] = c
		g.st.Leaders++
		go g.run(runCtx, c, run)
	}
	g.mu.Unlock()
	w = &Waiter[T]{g: g, c: c}
	w.stop = context.AfterFunc(ctx, w.Leave)
	return w, !ok
}

func (g *Group[T]) run(ctx context.Context, c *call[T], run RunFunc[T]) {
	var res T
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				g.log.Error("run panicked", "panic", p)
				err = fmt.Errorf("%w: %v", ErrPanic, p)
			}
		}()
		res, err = run(ctx, c.emit)
	}()
	c.cancel()
	g.mu.Lock()
	if g.calls[c.key] == c {
		delete(g.calls, c.key)
	}
	g.mu.Unlock()
	c.mu.Lock()
	c.res, c.err, c.done = res, err, true
	close(c.changed)
	c.mu.Unlock()
}

func (c *call[T]) emit(ev []byte) {
	cp := append([]byte(nil), ev...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	c.events = append(c.events, cp)
	close(c.changed)
	c.changed = make(chan struct{})
}

// Stats returns a snapshot of the counters.
func (g *Group[T]) Stats() Stats {
	if g == nil {
		return Stats{}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.st
	st.InFlight = len(g.calls)
	return st
}

// Waiter is one caller's view of a shared run.
type Waiter[T any] struct {
	g    *Group[T]
	c    *call[T]
	next int
	left bool // guarded by c.mu
	stop func() bool
}

// Next returns the next stream event, io.EOF after the last one once the run
// has ended, or ctx's error.
func (w *Waiter[T]) Next(ctx context.Context) ([]byte, error) {
	for {
		w.c.mu.Lock()
		if w.next < len(w.c.events) {
			ev := w.c.events[w.next]
			w.next++
			w.c.mu.Unlock()
			return ev, nil
		}
		done, ch := w.c.done, w.c.changed
		w.c.mu.Unlock()
		if done {
			return nil, io.EOF
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Result waits for the run to end and returns its result, or ctx's error.
func (w *Waiter[T]) Result(ctx context.Context) (T, error) {
	for {
		w.c.mu.Lock()
		done, ch, res, err := w.c.done, w.c.changed, w.c.res, w.c.err
		w.c.mu.Unlock()
		if done {
			return res, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	}
}

// Leave ends this waiter's interest. When the last waiter leaves before the
// run ends, the run is cancelled and forgotten, so a new identical request
// starts afresh. Extra calls are no-ops.
func (w *Waiter[T]) Leave() {
	if w.stop != nil {
		w.stop()
	}
	g, c := w.g, w.c
	g.mu.Lock()
	defer g.mu.Unlock()
	c.mu.Lock()
	if w.left {
		c.mu.Unlock()
		return
	}
	w.left = true
	c.waiters--
	abandon := c.waiters == 0 && !c.done
	c.mu.Unlock()
	if abandon {
		c.cancel()
		if g.calls[c.key] == c {
			delete(g.calls, c.key)
		}
		g.st.Canceled++
	}
}
