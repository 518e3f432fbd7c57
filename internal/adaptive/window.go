package adaptive

import (
	"math"
	"slices"
	"sync"
	"time"
)

// window is the global sample ring behind the reduction ratio. One mutex
// owns it; scratch slices are preallocated so Observe does not allocate.
type window struct {
	mu     sync.Mutex
	ring   []entry
	next   int
	n      int
	delays []time.Duration // scratch
	speeds []float64       // scratch
	last   windowStats
}

type entry struct {
	at    int64 // unix nanos
	delay time.Duration
	tps   float64
}

type windowStats struct {
	fresh     int
	delayP50  time.Duration
	tpsP50    float64
	reduction float64
}

func (w *window) init(size int) {
	w.ring = make([]entry, size)
	w.delays = make([]time.Duration, 0, size)
	w.speeds = make([]float64, 0, size)
}

// minFresh is how many fresh samples the window needs before it judges:
// a quarter of RAY_ADAPTIVE_SAMPLE_SIZE (8 of 32), so one slow request
// cannot cut everyone's caps.
func (w *window) minFresh() int { return (len(w.ring) + 3) / 4 }

func (w *window) observe(now time.Time, s Sample, o Options) float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ring[w.next] = entry{at: now.UnixNano(), delay: max(s.QueueDelay, 0), tps: s.TokensPerSecond}
	w.next = (w.next + 1) % len(w.ring)
	w.n = min(w.n+1, len(w.ring))
	return w.recomputeLocked(now, o).reduction
}

func (w *window) stats(now time.Time, o Options) windowStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.recomputeLocked(now, o)
}

// recomputeLocked judges the fresh samples: the p50 queue delay past its
// threshold and the p50 decode speed under its floor each give an excess in
// [0, 1] (1 at twice the delay threshold, or at zero speed); the larger,
// times MaxOutputReductionRatio, is the reduction.
func (w *window) recomputeLocked(now time.Time, o Options) windowStats {
	cutoff := now.Add(-o.MaxSampleAge).UnixNano()
	w.delays, w.speeds = w.delays[:0], w.speeds[:0]
	for _, e := range w.ring[:w.n] {
		if e.at < cutoff {
			continue
		}
		w.delays = append(w.delays, e.delay)
		if e.tps > 0 && !math.IsInf(e.tps, 0) {
			w.speeds = append(w.speeds, e.tps)
		}
	}
	st := windowStats{fresh: len(w.delays)}
	var excess float64
	if len(w.delays) >= w.minFresh() {
		slices.Sort(w.delays)
		st.delayP50 = w.delays[rankIndex(len(w.delays), 0.5)]
		if th := o.QueueLatencyThreshold; th > 0 && st.delayP50 > th {
			excess = max(excess, min(1, float64(st.delayP50-th)/float64(th)))
		}
	}
	if len(w.speeds) >= w.minFresh() {
		slices.Sort(w.speeds)
		st.tpsP50 = w.speeds[rankIndex(len(w.speeds), 0.5)]
		if th := o.MinCompletionTokensPerSecond; th > 0 && st.tpsP50 < th {
			excess = max(excess, min(1, (th-st.tpsP50)/th))
		}
	}
	st.reduction = o.MaxOutputReductionRatio * excess
	w.last = st
	return st
}

// rankIndex is the nearest-rank percentile's index into n sorted values:
// ceil(p*n)-1, within [0, n-1]. The epsilon keeps 0.9*10 at rank 9.
func rankIndex(n int, p float64) int {
	r := int(math.Ceil(p*float64(n) - 1e-9))
	return min(max(r, 1), n) - 1
}
