package admission

import (
	"errors"
	"math"
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

// pick returns the index in queue (arrival order) of the job to admit and
// its slot, or -1 when none may run now. Rules:
//   - order is (class, arrival): promoted, then short, then long;
//   - a job that does not fit the in-flight budget is skipped, except a
//     promoted one, which blocks everything behind it until it fits;
//   - among up to lookahead fitting jobs of the first job's class, the one
//     with the best affinity score on a free slot wins; with no positive
//     score the first one wins. Promoted jobs ignore affinity.
func (p policy) pick(queue []*waiter, freeSlots []int) (int, int) {
	var cands []int
	first := -1
scan:
	for c := classPromoted; c <= classLong; c++ {
		for i, w := range queue {
			if p.class(w) != c {
				continue
			}
			if w.tokens > p.budgetLeft {
				if c == classPromoted && len(cands) == 0 {
					return -1, -1
				}
				continue
			}
			if first < 0 {
				first = c
			} else if c != first {
				break scan
			}
			cands = append(cands, i)
			if first == classPromoted || len(cands) >= p.lookahead {
				break scan
			}
		}
		if first >= 0 {
			break
		}
	}
	if len(cands) == 0 {
		return -1, -1
	}
	best, bestSlot, bestScore := cands[0], -1, 0.0
	for _, i := range cands {
		score, slot := p.bestSlot(queue[i], freeSlots)
		if i == cands[0] {
			bestSlot = slot
		}
		if score > bestScore {
			best, bestSlot, bestScore = i, slot, score
		}
	}
	return best, bestSlot
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
