package admission

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A long job is admitted after at most MaxPassOvers later shorts, even though
// a fresh short job is always waiting.
func TestLongJobNotStarvedByPassOvers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := base()
		o.MaxPassOvers, o.MaxLongWait = 3, time.Hour
		s := New(o)
		running := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
		long := start(s, t.Context(), Job{OutputCap: 300})
		shortsBefore := 0
		for step := 0; step < 20; step++ {
			short := start(s, t.Context(), Job{OutputCap: 20})
			running.Release()
			synctest.Wait()
			if r, ok := ready(long); ok {
				if r.err != nil {
					t.Fatal(r.err)
				}
				if shortsBefore > o.MaxPassOvers {
					t.Fatalf("long job admitted after %d shorts, bound is %d", shortsBefore, o.MaxPassOvers)
				}
				if s.Stats().Promoted != 1 {
					t.Fatalf("promoted = %d, want 1", s.Stats().Promoted)
				}
				r.t.Release()
				synctest.Wait()
				mustTicket(t, short).Release()
				return
			}
			running = mustTicket(t, short)
			shortsBefore++
		}
		t.Fatalf("long job still waiting after %d shorts", shortsBefore)
	})
}

// A long job that has waited MaxLongWait is promoted even when pass-overs
// alone would let shorts keep going.
func TestLongJobPromotedByAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := base()
		o.MaxPassOvers, o.MaxLongWait = 1000, time.Second
		s := New(o)
		running := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
		long := start(s, t.Context(), Job{OutputCap: 300})
		for step := 0; step < 50; step++ {
			time.Sleep(200 * time.Millisecond) // each short runs 200ms of fake time
			short := start(s, t.Context(), Job{OutputCap: 20})
			running.Release()
			synctest.Wait()
			if r, ok := ready(long); ok {
				if r.err != nil {
					t.Fatalf("long job: %v", r.err)
				}
				if r.t.QueueDelay < time.Second || r.t.QueueDelay > time.Second+200*time.Millisecond {
					t.Fatalf("long job queue delay = %s, want within one step of 1s", r.t.QueueDelay)
				}
				r.t.Release()
				synctest.Wait()
				mustTicket(t, short).Release()
				return
			}
			running = mustTicket(t, short)
		}
		t.Fatal("long job never promoted")
	})
}

// A promoted job that does not fit the in-flight budget blocks smaller jobs
// behind it instead of being overtaken forever.
func TestPromotedJobBlocksUntilItFits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := base()
		o.Concurrency, o.MaxPassOvers, o.MaxLongWait = 3, 1, time.Hour
		s := New(o)
		a := mustTicket(t, start(s, t.Context(), Job{PromptTokens: 200, OutputCap: 50})) // 250
		big := start(s, t.Context(), Job{PromptTokens: 200, OutputCap: 200})             // 400: waits
		small1 := mustTicket(t, start(s, t.Context(), Job{OutputCap: 50}))               // passes big once
		small2 := start(s, t.Context(), Job{OutputCap: 50})
		if _, ok := ready(small2); ok {
			t.Fatal("small job overtook a promoted job")
		}
		a.Release()
		small1.Release()
		synctest.Wait()
		mustTicket(t, big).Release()
		synctest.Wait()
		mustTicket(t, small2).Release()
	})
}

// TestBatchWindowOrdersNearArrivals: with a job running, arrivals within
// the window are ordered together (the short one first on the free place).
func TestBatchWindowOrdersNearArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := base()
		o.Concurrency, o.BatchWindow = 2, 5*time.Millisecond
		s := New(o)
		busy, err := s.Acquire(t.Context(), Job{OutputCap: 10})
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Release()
		long := start(s, t.Context(), Job{OutputCap: 300})
		time.Sleep(time.Millisecond)
		short := start(s, t.Context(), Job{OutputCap: 20})
		if _, ok := ready(long); ok {
			t.Fatal("chose before the batch window closed")
		}
		time.Sleep(4 * time.Millisecond)
		synctest.Wait()
		tk := mustTicket(t, short)
		if tk.QueueDelay != 4*time.Millisecond {
			t.Fatalf("short queue delay = %s, want 4ms", tk.QueueDelay)
		}
		if _, ok := ready(long); ok {
			t.Fatal("long job admitted with the short one holding the only place")
		}
		tk.Release()
		synctest.Wait()
		mustTicket(t, long).Release()
	})
}

func TestAffinityLookahead(t *testing.T) {
	cases := []struct {
		name      string
		lookahead int
		wantKey   uint64
	}{
		{"hot job within lookahead wins", 3, 3},
		{"hot job beyond lookahead waits", 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := base()
				o.Concurrency, o.Slots, o.AffinityLookahead = 2, 2, tc.lookahead
				o.Affinity = newFake(map[[2]uint64]float64{{0, 3}: 1, {1, 1}: 0.5})
				s := New(o)
				a := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
				b := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
				if a.Slot != 0 || b.Slot != 1 {
					t.Fatalf("slots = %d,%d", a.Slot, b.Slot)
				}
				waiting := map[uint64]chan result{}
				for k := uint64(1); k <= 3; k++ {
					waiting[k] = start(s, t.Context(), Job{OutputCap: 20, PrefixKey: k})
				}
				a.Release() // slot 0 frees
				synctest.Wait()
				tk := mustTicket(t, waiting[tc.wantKey])
				if tk.Slot != 0 {
					t.Fatalf("slot = %d, want 0", tk.Slot)
				}
				for k, ch := range waiting {
					if _, ok := ready(ch); ok && k != tc.wantKey {
						t.Fatalf("job %d also admitted", k)
					}
				}
				tk.Release()
				b.Release()
				synctest.Wait()
				for k, ch := range waiting {
					if k != tc.wantKey {
						mustTicket(t, ch).Release()
						synctest.Wait()
					}
				}
			})
		})
	}
}

func TestImmediateAdmitPicksAffineSlot(t *testing.T) {
	s := New(Options{Concurrency: 2, Slots: 2, Affinity: newFake(map[[2]uint64]float64{{1, 7}: 1})})
	tk, err := s.Acquire(context.Background(), Job{OutputCap: 1, PrefixKey: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer tk.Release()
	if tk.Slot != 1 {
		t.Fatalf("slot = %d, want 1", tk.Slot)
	}
}

// TestIdleSchedulerSkipsTheBatchWindow: a lone request on an idle scheduler
// is admitted at once; the window applies only once something runs.
func TestIdleSchedulerSkipsTheBatchWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := base()
		o.Concurrency, o.BatchWindow = 2, 5*time.Millisecond
		s := New(o)
		first := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
		if first.QueueDelay != 0 {
			t.Fatalf("idle scheduler delayed a lone request by %s", first.QueueDelay)
		}
		second := start(s, t.Context(), Job{OutputCap: 10})
		synctest.Wait()
		if _, ok := ready(second); ok {
			t.Fatal("with a job running, a new arrival skipped the batch window")
		}
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		if tk := mustTicket(t, second); tk.QueueDelay != 5*time.Millisecond {
			t.Fatalf("second queue delay = %s, want the 5ms window", tk.QueueDelay)
		} else {
			tk.Release()
		}
		first.Release()
	})
}

// TestSetConcurrencyAdmitsWaiters: raising the concurrency admits waiting
// jobs at once; lowering it stops new admissions but no running job.
func TestSetConcurrencyAdmitsWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := base()
		o.Concurrency, o.BatchWindow = 1, 0
		s := New(o)
		first := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
		second := start(s, t.Context(), Job{OutputCap: 10})
		synctest.Wait()
		if _, ok := ready(second); ok {
			t.Fatal("admitted beyond the concurrency")
		}
		s.SetConcurrency(2)
		synctest.Wait()
		tk := mustTicket(t, second)
		s.SetConcurrency(1)
		third := start(s, t.Context(), Job{OutputCap: 10})
		first.Release()
		synctest.Wait()
		if _, ok := ready(third); ok {
			t.Fatal("admitted with two running and a concurrency of 1")
		}
		tk.Release()
		synctest.Wait()
		mustTicket(t, third).Release()
	})
}
