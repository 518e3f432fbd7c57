package admission

import (
	"errors"
	"math"
	"slices"
	"time"
)

// Job classes in the order they are served.
const (
	classPromoted = iota // passed over too often or waited too long: arrival order, first
	classShort           // output cap <= ShortJobMaxTokens
	classLong
)

// policy is the pure decision of which queued job runs next and on which
// slot. It reads the waiters and never changes them.
type policy struct {
	now          time.Time
	budgetLeft   int
	lookahead    int
	maxPassOvers int
	maxLongWait  time.Duration
	affinity     Affinity
}

func (p policy) class(w *waiter) int {
	switch {
	case w.passOvers >= p.maxPassOvers, !w.short && p.now.Sub(w.arrived) >= p.maxLongWait:
		return classPromoted
	case w.short:
		return classShort
	}
	return classLong
}

// decision is the outcome of pick: the queue index and slot to grant, the
// affinity score of that pair and why the job was chosen (for debug logs).
type decision struct {
	index  int // in queue (arrival order); -1: none may run now
	slot   int
	score  float64
	reason string // "promoted", "affine", "cold", "head"
}

// pick decides which queued job (arrival order) to admit and on which slot.
// Rules:
//   - order is (class, arrival): promoted, then short, then long;
//   - a job that does not fit the in-flight budget is skipped, except a
//     promoted one, which blocks everything behind it until it fits;
//   - among up to lookahead fitting jobs of the first job's class, the one
//     with the best affinity score on a free slot wins; with no positive
//     score the first job whose prefix is warm on no busy slot wins (a job
//     warm on a busy slot waits for it); failing that the first one wins.
//     Promoted jobs ignore affinity.
func (p policy) pick(queue []*waiter, freeSlots []int) decision {
	cands, first := p.candidates(queue)
	if len(cands) == 0 {
		return decision{index: -1, slot: -1}
	}
	if first == classPromoted {
		_, slot := p.bestSlot(queue[cands[0]], freeSlots)
		return decision{index: cands[0], slot: slot, reason: "promoted"}
	}
	best := decision{index: -1, slot: -1}
	for _, i := range cands {
		if score, slot := p.bestSlot(queue[i], freeSlots); score > best.score {
			best = decision{index: i, slot: slot, score: score, reason: "affine"}
		}
	}
	if best.index >= 0 {
		return best
	}
	for _, i := range cands {
		if !p.warmOnBusySlot(queue[i], freeSlots) {
			_, slot := p.bestSlot(queue[i], freeSlots)
			reason := "cold"
			if i == cands[0] {
				reason = "head"
			}
			return decision{index: i, slot: slot, reason: reason}
		}
	}
	_, slot := p.bestSlot(queue[cands[0]], freeSlots)
	return decision{index: cands[0], slot: slot, reason: "head"}
}

// candidates returns the queue indexes pick chooses among and their class.
func (p policy) candidates(queue []*waiter) ([]int, int) {
	var cands []int
	first := -1
	for c := classPromoted; c <= classLong; c++ {
		for i, w := range queue {
			if p.class(w) != c {
				continue
			}
			if w.tokens > p.budgetLeft {
				if c == classPromoted {
					return nil, -1
				}
				continue
			}
			first = c
			cands = append(cands, i)
			if c == classPromoted || len(cands) >= p.lookahead {
				return cands, first
			}
		}
		if first >= 0 {
			return cands, first
		}
	}
	return cands, first
}

// warmOnBusySlot reports whether w's prefix is held by a slot that is not
// free. Without free slots (the engine chooses) nothing is worth waiting for.
func (p policy) warmOnBusySlot(w *waiter, freeSlots []int) bool {
	if p.affinity == nil || w.job.PrefixKey == 0 || len(freeSlots) == 0 {
		return false
	}
	h := p.affinity.Holder(w.job.PrefixKey)
	return h >= 0 && !slices.Contains(freeSlots, h)
}

// bestSlot returns the free slot with the highest affinity score for w (the
// lowest id on ties), or -1 when no slot is free.
func (p policy) bestSlot(w *waiter, freeSlots []int) (float64, int) {
	if len(freeSlots) == 0 {
		return 0, -1
	}
	slot, score := freeSlots[0], 0.0
	if p.affinity == nil || w.job.PrefixKey == 0 {
		return 0, slot
	}
	for _, f := range freeSlots {
		if sc := p.affinity.Score(f, w.job.PrefixKey); sc > score {
			slot, score = f, sc
		}
	}
	return score, slot
}

// RejectError is a refusal that suggests when to retry (ErrQueueFull).
type RejectError struct {
	Err        error
	RetryAfter time.Duration
}

func (e *RejectError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped sentinel chain.
func (e *RejectError) Unwrap() error { return e.Err }

// RetryAfterSeconds is the Retry-After header value suggested by err: whole
// seconds, at least 1; 0 when err carries no suggestion.
func RetryAfterSeconds(err error) int {
	var re *RejectError
	if !errors.As(err, &re) {
		return 0
	}
	return max(1, int(math.Ceil(re.RetryAfter.Seconds())))
}

// retryAfterLocked estimates when a queue place frees: the jobs ahead
// divided among the workers, times the average run time, capped by the
// request timeout.
func (s *Scheduler) retryAfterLocked() time.Duration {
	ahead := len(s.queue) + 1
	waves := (ahead + s.opts.Concurrency - 1) / s.opts.Concurrency
	d := s.avgRun * time.Duration(waves)
	return min(max(d, time.Second), s.opts.RequestTimeout)
}
