package degrade

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// countingSource records how often it was sampled and reports a fixed RSS.
type countingSource struct {
	n   atomic.Int64
	rss float64
}

func (c *countingSource) Sample(r *Readings) {
	c.n.Add(1)
	r.RSSMiB = ok(c.rss)
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time      { return c.t }
func (c *fakeClock) Add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }
func (c *countingSource) count() int64   { return c.n.Load() }

func TestSamplerRefreshAtMostEveryInterval(t *testing.T) {
	clk := newFakeClock()
	src := &countingSource{rss: 7}
	s := NewSampler(SamplerOptions{Sources: []Source{src}, Interval: 500 * time.Millisecond, Now: clk.Now})

	if r := s.Snapshot(); r.RSSMiB.OK || !r.At.IsZero() {
		t.Fatalf("snapshot before the first sample = %+v, want all unavailable", r)
	}
	steps := []struct {
		advance time.Duration
		sampled bool
		count   int64
	}{
		{0, true, 1},                       // first call always samples
		{499 * time.Millisecond, false, 1}, // too soon
		{1 * time.Millisecond, true, 2},    // exactly one interval
		{100 * time.Millisecond, false, 2},
		{2 * time.Second, true, 3},
	}
	for i, st := range steps {
		clk.Add(st.advance)
		if got := s.Refresh(); got != st.sampled {
			t.Fatalf("step %d: Refresh() = %v, want %v", i, got, st.sampled)
		}
		if src.count() != st.count {
			t.Fatalf("step %d: sampled %d times, want %d", i, src.count(), st.count)
		}
	}
	r := s.Snapshot()
	if !r.RSSMiB.OK || r.RSSMiB.Value != 7 || !r.At.Equal(clk.Now()) {
		t.Fatalf("snapshot = %+v", r)
	}
}

func TestSamplerRunTicksAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &countingSource{rss: 1}
		s := NewSampler(SamplerOptions{Sources: []Source{src}, Interval: time.Second})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()

		synctest.Wait()
		if src.count() != 1 {
			t.Fatalf("Run did not sample at once: %d", src.count())
		}
		time.Sleep(3*time.Second + time.Millisecond) // fake time inside the bubble
		synctest.Wait()
		if src.count() != 4 {
			t.Fatalf("after 3 intervals sampled %d times, want 4", src.count())
		}
		cancel()
		<-done
		n := src.count()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if src.count() != n {
			t.Fatalf("sampled after Run returned: %d -> %d", n, src.count())
		}
	})
}

type panicSource struct{}

func (panicSource) Sample(*Readings) { panic("boom") }

func TestSamplerRunRecoversPanic(t *testing.T) {
	s := NewSampler(SamplerOptions{Sources: []Source{panicSource{}}})
	done := make(chan struct{})
	go func() { s.Run(t.Context()); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after a source panicked")
	}
	if r := s.Snapshot(); r.RSSMiB.OK {
		t.Fatalf("snapshot after panic = %+v", r)
	}
}
