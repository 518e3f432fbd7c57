// Package admission owns the admission scheduler: how many requests run on
// the engine at once, how many may wait, the token budgets of the waiting and
// the running, short-job priority without starvation, the batch window, slot
// affinity when a slot frees, and the queue timeout.
//
// The handler calls it once per request, after the response cache and the
// in-flight dedupe (so a cache hit or a dedupe follower never takes a place)
// and before the engine call:
//
//	sched := admission.FromConfig(cfg, slotTracker) // once, at start
//	t, err := sched.Acquire(r.Context(), admission.Job{
//		PromptTokens: est, OutputCap: outCap, PrefixKey: compiled.PrefixKey})
//	switch {
//	case errors.Is(err, admission.ErrTooLarge):    // 413
//	case errors.Is(err, admission.ErrQueueFull):   // 429, Retry-After: admission.RetryAfterSeconds(err)
//	case errors.Is(err, admission.ErrQueueTimeout): // 504
//	case errors.Is(err, admission.ErrCanceled):    // client went away; write nothing
//	}
//	defer t.Release()
//	// X-Ray-Queue-Ms: t.QueueDelay.Milliseconds(); send id_slot t.Slot when >= 0
//
// Ticket.Release must be called exactly once the engine work ends (extra calls
// are ignored). Stats feeds the metrics.
package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/raygw/raygw/internal/config"
)

// Sentinel errors; every error Acquire returns wraps exactly one of them.
var (
	// ErrTooLarge: the job alone exceeds a token budget and can never run (413).
	ErrTooLarge = errors.New("request exceeds the scheduler token budget")
	// ErrQueueFull: the queue has no room, by count or by tokens (429).
	ErrQueueFull = errors.New("scheduler queue is full")
	// ErrQueueTimeout: the job waited longer than the request timeout (504).
	ErrQueueTimeout = errors.New("timed out waiting in the scheduler queue")
	// ErrCanceled: the caller's context ended while it waited.
	ErrCanceled = errors.New("caller left the scheduler queue")
)

// Affinity knows which engine slot holds which prompt prefix.
// internal/slots implements it. The scheduler calls it under its own lock, so
// implementations must not call back into the scheduler.
type Affinity interface {
	// Score is how well slot suits prefixKey: 0 means no benefit, higher is better.
	Score(slot int, prefixKey uint64) float64
	// Holder is the slot holding prefixKey now, or -1 when none does.
	Holder(prefixKey uint64) int
	// Remember records that slot now holds prefixKey; the scheduler calls it
	// when it grants the slot, so the next decision sees the prefix warm.
	Remember(slot int, prefixKey uint64)
}

// Options configures a Scheduler. Zero token budgets mean unlimited.
type Options struct {
	Concurrency       int           // jobs running at once (min 1)
	MaxQueue          int           // jobs waiting at once (0: none may wait)
	MaxQueuedTokens   int           // token budget of all waiting jobs
	MaxInflightTokens int           // token budget of all running jobs
	RequestTimeout    time.Duration // longest wait in the queue (0: 30s)
	BatchWindow       time.Duration // arrivals this close together are ordered together
	AffinityLookahead int           // queued jobs scanned for a slot-affine one (min 1)
	ShortJobMaxTokens int           // output caps up to this are short jobs
	// Slots is the number of engine slots handed out as Ticket.Slot
	// (llama.cpp --parallel); 0 hands out none (Ticket.Slot is -1).
	Slots int
	// MaxPassOvers promotes a job once this many later arrivals were admitted
	// ahead of it (0: 8). Promoted jobs run in arrival order before all others.
	MaxPassOvers int
	// MaxLongWait promotes a long job that has waited this long
	// (0: a quarter of RequestTimeout).
	MaxLongWait time.Duration
	Affinity    Affinity     // nil: no slot affinity
	Logger      *slog.Logger // nil: slog.Default()
}

// FromConfig builds the scheduler of the RAY_SCHEDULER_* settings; slots are
// the llama.cpp slots (RAY_LLAMA_CPP_PARALLEL). aff may be nil.
func FromConfig(cfg *config.Config, aff Affinity) *Scheduler {
	s := cfg.Scheduler
	return New(Options{
		Concurrency: s.Concurrency, MaxQueue: s.MaxQueue,
		MaxQueuedTokens: s.MaxQueuedTokens, MaxInflightTokens: s.MaxInflightTokens,
		RequestTimeout: config.Duration(s.RequestTimeoutMS), BatchWindow: config.Duration(s.BatchWindowMS),
		AffinityLookahead: s.AffinityLookahead, ShortJobMaxTokens: s.ShortJobMaxTokens,
		Slots: cfg.LlamaCpp.Parallel, Affinity: aff,
	})
}

// Job is what the scheduler needs to know about one request.
type Job struct {
	PromptTokens int    // estimated prompt tokens
	OutputCap    int    // max tokens the job may generate
	PrefixKey    uint64 // prompt-prefix hash for slot affinity (0: none)
}

// Tokens is the job's weight against the budgets.
func (j Job) Tokens() int { return max(j.PromptTokens, 0) + max(j.OutputCap, 0) }

// Ticket is an admitted job. Release it when the engine work ends.
type Ticket struct {
	Slot       int           // engine slot to use (id_slot), or -1 for any
	Position   int           // jobs waiting ahead of this one when it arrived
	QueueDelay time.Duration // time from arrival to admission
	s          *Scheduler
	w          *waiter
}

// Release frees the ticket's place, slot and budget. Extra calls are no-ops.
func (t *Ticket) Release() {
	if t == nil || t.s == nil {
		return
	}
	t.s.release(t.w)
}

// Stats is a snapshot of the scheduler for metrics.
type Stats struct {
	Running, Queued                int
	InflightTokens, QueuedTokens   int
	Admitted, Promoted             uint64
	RejectedTooLarge, RejectedFull uint64
	TimedOut, Canceled             uint64
}

// Scheduler admits jobs. One mutex owns all of its state; see design.md.
type Scheduler struct {
	opts Options
	log  *slog.Logger

	mu             sync.Mutex
	queue          []*waiter // arrival order
	seq            uint64
	running        int
	inflightTokens int
	queuedTokens   int
	slotBusy       []bool
	timerArmed     bool
	avgRun         time.Duration // moving average of run time, for Retry-After
	stats          Stats
}

// New returns a scheduler with opts, defaults filled in.
func New(opts Options) *Scheduler {
	if opts.Concurrency < 1 {
		opts.Concurrency = 1
	}
	if opts.MaxQueue < 0 {
		opts.MaxQueue = 0
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	if opts.AffinityLookahead < 1 {
		opts.AffinityLookahead = 1
	}
	if opts.MaxPassOvers <= 0 {
		opts.MaxPassOvers = 8
	}
	if opts.MaxLongWait <= 0 {
		opts.MaxLongWait = opts.RequestTimeout / 4
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Scheduler{opts: opts, log: opts.Logger.With("component", "admission"),
		slotBusy: make([]bool, max(opts.Slots, 0)), avgRun: time.Second}
}

// SetConcurrency changes how many jobs run at once (min 1), as a
// deployment's healthy replicas come and go. Waiting jobs are admitted at
// once when it grows; running jobs are never stopped when it shrinks.
func (s *Scheduler) SetConcurrency(n int) {
	n = max(n, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == s.opts.Concurrency {
		return
	}
	s.opts.Concurrency = n
	s.dispatchLocked(time.Now())
}

type waiter struct {
	job       Job
	tokens    int
	short     bool
	seq       uint64
	arrived   time.Time
	passOvers int
	position  int
	ready     chan struct{} // closed on admission
	granted   bool
	released  bool
	slot      int
	admitted  time.Time
}

// Acquire waits until job may run and returns its ticket, or an error
// wrapping one of the package's sentinels. It never waits longer than the
// request timeout.
func (s *Scheduler) Acquire(ctx context.Context, job Job) (*Ticket, error) {
	if err := s.checkSize(job); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCanceled, context.Cause(ctx))
	}
	now := time.Now()
	s.mu.Lock()
	w := &waiter{job: job, tokens: job.Tokens(), short: job.OutputCap <= s.opts.ShortJobMaxTokens,
		seq: s.seq, arrived: now, position: len(s.queue), slot: -1}
	s.seq++
	// The batch window orders arrivals that contend; with nothing running
	// and nobody waiting there is no contender, so waiting would only add
	// latency to a lone request.
	idle := s.running == 0
	if len(s.queue) == 0 && (s.opts.BatchWindow <= 0 || s.opts.MaxQueue == 0 || idle) && s.running < s.opts.Concurrency && s.fitsLocked(w) {
		score, slot := s.policy(now).bestSlot(w, s.freeSlotsLocked())
		s.grantLocked(w, now, slot)
		s.logGrantLocked("admit", w, decision{slot: slot, score: score, reason: "immediate"})
		s.mu.Unlock()
		return s.ticket(w), nil
	}
	if err := s.checkRoomLocked(w); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	w.ready = make(chan struct{})
	s.queue = append(s.queue, w)
	s.queuedTokens += w.tokens
	s.dispatchLocked(now)
	s.mu.Unlock()
	return s.wait(ctx, w)
}

func (s *Scheduler) checkSize(job Job) error {
	n := job.Tokens()
	for _, b := range []struct {
		name  string
		limit int
	}{{"in-flight", s.opts.MaxInflightTokens}, {"queued", s.opts.MaxQueuedTokens}} {
		if b.limit > 0 && n > b.limit {
			s.mu.Lock()
			s.stats.RejectedTooLarge++
			s.mu.Unlock()
			return fmt.Errorf("%w: %d tokens (prompt %d + output cap %d) exceed the %s budget of %d",
				ErrTooLarge, n, job.PromptTokens, job.OutputCap, b.name, b.limit)
		}
	}
	return nil
}

func (s *Scheduler) checkRoomLocked(w *waiter) error {
	var why string
	switch {
	case len(s.queue) >= s.opts.MaxQueue:
		why = fmt.Sprintf("%d requests already waiting", len(s.queue))
	case s.opts.MaxQueuedTokens > 0 && s.queuedTokens+w.tokens > s.opts.MaxQueuedTokens:
		why = fmt.Sprintf("%d queued tokens + %d would pass the budget of %d",
			s.queuedTokens, w.tokens, s.opts.MaxQueuedTokens)
	default:
		return nil
	}
	s.stats.RejectedFull++
	return &RejectError{Err: fmt.Errorf("%w: %s", ErrQueueFull, why), RetryAfter: s.retryAfterLocked()}
}

func (s *Scheduler) wait(ctx context.Context, w *waiter) (*Ticket, error) {
	timer := time.NewTimer(s.opts.RequestTimeout)
	defer timer.Stop()
	select {
	case <-w.ready:
		return s.ticket(w), nil
	case <-ctx.Done():
		return s.abandon(w, fmt.Errorf("%w: %w", ErrCanceled, context.Cause(ctx)), false)
	case <-timer.C:
		return s.abandon(w, fmt.Errorf("%w after %s", ErrQueueTimeout, s.opts.RequestTimeout), true)
	}
}

// abandon takes w out of the queue. If it was admitted in the same instant,
// a timeout keeps the ticket and a cancellation gives it back.
func (s *Scheduler) abandon(w *waiter, err error, timeout bool) (*Ticket, error) {
	s.mu.Lock()
	if w.granted {
		s.mu.Unlock()
		if timeout {
			return s.ticket(w), nil
		}
		s.release(w)
		return nil, err
	}
	s.removeLocked(w)
	if timeout {
		s.stats.TimedOut++
	} else {
		s.stats.Canceled++
	}
	s.dispatchLocked(time.Now())
	s.mu.Unlock()
	return nil, err
}

func (s *Scheduler) ticket(w *waiter) *Ticket {
	return &Ticket{Slot: w.slot, Position: w.position, QueueDelay: w.admitted.Sub(w.arrived), s: s, w: w}
}

func (s *Scheduler) release(w *waiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.released || !w.granted {
		return
	}
	w.released = true
	now := time.Now()
	s.running--
	s.inflightTokens -= w.tokens
	if w.slot >= 0 {
		s.slotBusy[w.slot] = false
	}
	// Exponential moving average of run time, weight 1/8.
	s.avgRun += (now.Sub(w.admitted) - s.avgRun) / 8
	s.dispatchLocked(now)
}

func (s *Scheduler) fitsLocked(w *waiter) bool {
	return s.opts.MaxInflightTokens <= 0 || s.inflightTokens+w.tokens <= s.opts.MaxInflightTokens
}

func (s *Scheduler) grantLocked(w *waiter, now time.Time, slot int) {
	w.granted, w.admitted, w.slot = true, now, slot
	s.running++
	s.inflightTokens += w.tokens
	if slot >= 0 {
		s.slotBusy[slot] = true
		if s.opts.Affinity != nil && w.job.PrefixKey != 0 {
			s.opts.Affinity.Remember(slot, w.job.PrefixKey)
		}
	}
	s.stats.Admitted++
	if w.ready != nil {
		close(w.ready)
	}
}

func (s *Scheduler) removeLocked(w *waiter) {
	for i, q := range s.queue {
		if q == w {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			s.queuedTokens -= w.tokens
			return
		}
	}
}

// dispatchLocked admits queued jobs while there is room, honouring the batch
// window: no choice is made before the oldest waiter has waited a window.
func (s *Scheduler) dispatchLocked(now time.Time) {
	for s.running < s.opts.Concurrency && len(s.queue) > 0 {
		if wait := s.opts.BatchWindow - now.Sub(s.queue[0].arrived); wait > 0 {
			s.armTimerLocked(wait)
			return
		}
		d := s.policy(now).pick(s.queue, s.freeSlotsLocked())
		if d.index < 0 {
			return
		}
		w := s.queue[d.index]
		if w.passOvers >= s.opts.MaxPassOvers || (!w.short && now.Sub(w.arrived) >= s.opts.MaxLongWait) {
			s.stats.Promoted++
		}
		for _, ahead := range s.queue[:d.index] {
			ahead.passOvers++
		}
		s.removeLocked(w)
		s.grantLocked(w, now, d.slot)
		s.logGrantLocked("dispatch", w, d)
	}
}

// logGrantLocked logs one admission at debug level; path is "admit" (the
// fast path) or "dispatch" (from the queue).
func (s *Scheduler) logGrantLocked(path string, w *waiter, d decision) {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	s.log.Debug("admitted", "path", path, "slot", w.slot, "prefix_key", w.job.PrefixKey,
		"score", d.score, "reason", d.reason, "queue_len", len(s.queue), "pass_overs", w.passOvers,
		"queue_ms", w.admitted.Sub(w.arrived).Milliseconds())
}

func (s *Scheduler) armTimerLocked(d time.Duration) {
	if s.timerArmed {
		return
	}
	s.timerArmed = true
	time.AfterFunc(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.timerArmed = false
		s.dispatchLocked(time.Now())
	})
}

func (s *Scheduler) freeSlotsLocked() []int {
	var free []int
	for i, busy := range s.slotBusy {
		if !busy {
			free = append(free, i)
		}
	}
	return free
}

func (s *Scheduler) policy(now time.Time) policy {
	budget := math.MaxInt
	if s.opts.MaxInflightTokens > 0 {
		budget = s.opts.MaxInflightTokens - s.inflightTokens
	}
	return policy{now: now, budgetLeft: budget, lookahead: s.opts.AffinityLookahead,
		maxPassOvers: s.opts.MaxPassOvers, maxLongWait: s.opts.MaxLongWait, affinity: s.opts.Affinity}
}

// Stats returns a snapshot of the scheduler's counters and gauges.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Running, st.Queued = s.running, len(s.queue)
	st.InflightTokens, st.QueuedTokens = s.inflightTokens, s.queuedTokens
	return st
}
