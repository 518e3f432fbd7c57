package adaptive

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// family is one prompt family's recent answer lengths. Its mutex guards the
// ring; the learned cap is published through an atomic for Cap.
type family struct {
	mu       sync.Mutex
	lens     []int32
	censored []bool // answer hit its cap: true length >= lens[i]
	next, n  int
	scratch  []int32

	learned atomic.Int64 // 0: no learned cap
	short   atomic.Bool
}

func newFamily(size int) *family {
	return &family{lens: make([]int32, size), censored: make([]bool, size), scratch: make([]int32, 0, size)}
}

func (f *family) observe(s Sample, o Options) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lens[f.next] = int32(min(s.CompletionTokens, math.MaxInt32))
	f.censored[f.next] = s.Truncated()
	f.next = (f.next + 1) % len(f.lens)
	f.n = min(f.n+1, len(f.lens))
	learned, short := f.computeLocked(o)
	f.learned.Store(learned)
	f.short.Store(short)
}

// computeLocked learns the family's cap. Truncated answers are censored:
// their true length is unknown but at least what they got, so they sort
// above every complete answer (as +Inf). They can only raise the percentile;
// when the percentile lands on one, the family has no learned cap. A
// family is short when its median is at most ShortJobMaxTokens; it then uses
// ShortPercentile, otherwise DraftPercentile.
func (f *family) computeLocked(o Options) (learned int64, short bool) {
	if f.n < o.LearnedCapMinSamples {
		return 0, false
	}
	f.scratch = f.scratch[:0]
	for i := range f.n {
		if !f.censored[i] {
			f.scratch = append(f.scratch, f.lens[i])
		}
	}
	slices.Sort(f.scratch)
	median, ok := censoredPercentile(f.scratch, f.n, 0.5)
	short = ok && o.ShortJobMaxTokens > 0 && int(median) <= o.ShortJobMaxTokens
	p := o.DraftPercentile
	if short {
		p = o.ShortPercentile
	}
	v, ok := censoredPercentile(f.scratch, f.n, p)
	if !ok {
		return 0, short
	}
	return max(int64(v)+int64(o.HeadroomTokens), 1), short
}

// censoredPercentile is the nearest-rank p-percentile of n samples whose
// complete values are the sorted uncensored slice and whose n-len(uncensored)
// censored values rank above them all; ok is false when it is a censored one.
func censoredPercentile(uncensored []int32, n int, p float64) (int32, bool) {
	i := rankIndex(n, p)
	if i >= len(uncensored) {
		return 0, false
	}
	return uncensored[i], true
}

// FamilyStats describes one family's learning.
type FamilyStats struct {
	Samples  int  // lengths held (at most RAY_ADAPTIVE_FAMILY_HISTORY_SIZE)
	Censored int  // of which truncated
	Cap      int  // learned cap before the MinOutputTokens floor (0: none)
	Short    bool // uses ShortPercentile
}

// Family reports a family's learning; ok is false for an unknown family.
func (t *Tuner) Family(name string) (FamilyStats, bool) {
	f, ok := t.families.Peek(name)
	if !ok {
		return FamilyStats{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := FamilyStats{Samples: f.n, Cap: int(f.learned.Load()), Short: f.short.Load()}
	for _, c := range f.censored[:f.n] {
		if c {
			st.Censored++
		}
	}
	return st, true
}

// Stats is the tuner's state for metrics.
type Stats struct {
	Observed           uint64
	WindowSamples      int           // fresh samples in the global window
	QueueDelayP50      time.Duration // 0 until the window has enough samples
	TokensPerSecondP50 float64
	Reduction          float64 // current global reduction ratio (0: none)
	Families           int     // families remembered
	LearnedFamilies    int     // of which with a learned cap
	// Cap results by reason.
	CapsRequested, CapsLearned, CapsReduced, CapsLearnedReduced uint64
}

// Stats returns a snapshot; it walks the families, so call it from a
// metrics scrape, not per request.
func (t *Tuner) Stats() Stats {
	st := Stats{
		Observed:      t.observed.Load(),
		CapsRequested: t.caps[0].Load(), CapsLearned: t.caps[1].Load(),
		CapsReduced: t.caps[2].Load(), CapsLearnedReduced: t.caps[3].Load(),
	}
	if t.opts.TuningEnabled {
		w := t.global.stats(t.opts.Now(), t.opts)
		st.WindowSamples, st.QueueDelayP50, st.TokensPerSecondP50, st.Reduction = w.fresh, w.delayP50, w.tpsP50, w.reduction
	}
	for _, name := range t.families.Keys() {
		if f, ok := t.families.Peek(name); ok {
			st.Families++
			if f.learned.Load() > 0 {
				st.LearnedFamilies++
			}
		}
	}
	return st
}
