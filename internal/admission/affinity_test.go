package admission

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeAffinity is an Affinity with fixed scores and a holder memory that
// Remember updates like slots.Tracker does: a slot holds one prefix at a time.
type fakeAffinity struct {
	mu         sync.Mutex
	score      map[[2]uint64]float64 // {slot, key} -> fixed score
	holder     map[uint64]int        // key -> slot
	remembered [][2]uint64           // {slot, key} per Remember call
}

func newFake(score map[[2]uint64]float64) *fakeAffinity {
	return &fakeAffinity{score: score, holder: map[uint64]int{}}
}

// Score is the fixed score if any, else 1 when slot holds key.
func (f *fakeAffinity) Score(slot int, key uint64) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.score[[2]uint64{uint64(slot), key}]; ok {
		return v
	}
	if h, ok := f.holder[key]; ok && h == slot {
		return 1
	}
	return 0
}

func (f *fakeAffinity) Holder(key uint64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.holder[key]; ok {
		return h
	}
	return -1
}

func (f *fakeAffinity) Remember(slot int, key uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, h := range f.holder {
		if h == slot {
			delete(f.holder, k)
		}
	}
	f.holder[key] = slot
	f.remembered = append(f.remembered, [2]uint64{uint64(slot), key})
}

func (f *fakeAffinity) calls() [][2]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.remembered)
}

func TestPickPrefersColdOverWarmOnBusySlot(t *testing.T) {
	const busyKey, coldKey, freeKey = 10, 20, 30
	type qj struct {
		key       uint64
		short     bool
		passOvers int
	}
	cases := []struct {
		name       string
		queue      []qj
		free       []int
		lookahead  int
		wantIndex  int
		wantSlot   int
		wantReason string
	}{
		{"warm on the free slot wins", []qj{{coldKey, true, 0}, {freeKey, true, 0}}, []int{0}, 4, 1, 0, "affine"},
		{"cold job beats head warm on busy slot", []qj{{busyKey, true, 0}, {coldKey, true, 0}}, []int{0}, 4, 1, 0, "cold"},
		{"job without prefix counts as cold", []qj{{busyKey, true, 0}, {0, true, 0}}, []int{0}, 4, 1, 0, "cold"},
		{"cold head keeps its turn", []qj{{coldKey, true, 0}, {busyKey, true, 0}}, []int{0}, 4, 0, 0, "head"},
		{"all warm on busy slots: head runs", []qj{{busyKey, true, 0}, {busyKey, true, 0}}, []int{0}, 4, 0, 0, "head"},
		{"cold job beyond lookahead: head runs", []qj{{busyKey, true, 0}, {coldKey, true, 0}}, []int{0}, 1, 0, 0, "head"},
		{"promoted head ignores affinity", []qj{{busyKey, true, 3}, {coldKey, true, 0}}, []int{0}, 4, 0, 0, "promoted"},
		{"no free slot: engine chooses, head runs", []qj{{busyKey, true, 0}, {coldKey, true, 0}}, nil, 4, 0, -1, "head"},
		{"cold long job does not jump a short one", []qj{{busyKey, true, 0}, {coldKey, false, 0}}, []int{0}, 4, 0, 0, "head"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			aff := newFake(nil)
			aff.holder[busyKey], aff.holder[freeKey] = 1, 0
			var q []*waiter
			for i, j := range tc.queue {
				q = append(q, &waiter{job: Job{PrefixKey: j.key}, tokens: 10, short: j.short,
					seq: uint64(i), arrived: now, passOvers: j.passOvers})
			}
			p := policy{now: now, budgetLeft: 1000, lookahead: tc.lookahead, maxPassOvers: 3,
				maxLongWait: time.Hour, affinity: aff}
			d := p.pick(q, tc.free)
			if d.index != tc.wantIndex || d.slot != tc.wantSlot || d.reason != tc.wantReason {
				t.Fatalf("pick = %+v, want index %d slot %d reason %q", d, tc.wantIndex, tc.wantSlot, tc.wantReason)
			}
		})
	}
}

// Two jobs of one family queued together: the first is granted a slot and
// remembered there at once, so the second waits for that slot while a cold
// job takes the other one.
func TestGrantRemembersPrefix(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := base()
		o.Concurrency, o.Slots, o.BatchWindow = 2, 2, 5*time.Millisecond
		aff := newFake(nil)
		o.Affinity = aff
		s := New(o)
		a := start(s, t.Context(), Job{OutputCap: 10, PrefixKey: 7})
		b := start(s, t.Context(), Job{OutputCap: 10, PrefixKey: 7})
		c := start(s, t.Context(), Job{OutputCap: 10, PrefixKey: 8})
		time.Sleep(5 * time.Millisecond)
		synctest.Wait()
		ta, tc := mustTicket(t, a), mustTicket(t, c)
		if ta.Slot != 0 || tc.Slot != 1 {
			t.Fatalf("slots a=%d c=%d, want 0 and 1", ta.Slot, tc.Slot)
		}
		if _, ok := ready(b); ok {
			t.Fatal("second job of the family started cold on the other slot")
		}
		if got, want := aff.calls(), [][2]uint64{{0, 7}, {1, 8}}; !slices.Equal(got, want) {
			t.Fatalf("remembered = %v, want %v", got, want)
		}
		ta.Release()
		synctest.Wait()
		tb := mustTicket(t, b)
		if tb.Slot != 0 {
			t.Fatalf("b slot = %d, want 0 (warm)", tb.Slot)
		}
		tb.Release()
		tc.Release()
	})
}

func TestImmediateAdmitRemembersPrefix(t *testing.T) {
	aff := newFake(nil)
	s := New(Options{Concurrency: 2, Slots: 2, Affinity: aff})
	for _, key := range []uint64{0, 5} { // key 0 is never remembered
		tk, err := s.Acquire(t.Context(), Job{OutputCap: 1, PrefixKey: key})
		if err != nil {
			t.Fatal(err)
		}
		defer tk.Release()
	}
	if got, want := aff.calls(), [][2]uint64{{1, 5}}; !slices.Equal(got, want) {
		t.Fatalf("remembered = %v, want %v", got, want)
	}
	if h := aff.Holder(5); h != 1 {
		t.Fatalf("holder = %d, want 1", h)
	}
}

// A job warm on a busy slot waits for it while cold jobs take the free slot,
// but only MaxPassOvers times; with nothing else waiting it runs at once.
func TestWarmOnBusySlotNotStarved(t *testing.T) {
	const key = 42
	cases := []struct {
		name      string
		coldJobs  bool
		wantAfter int // cold jobs admitted before the warm one
	}{
		{"cold jobs keep coming", true, 3},
		{"nothing else comes", false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := base()
				o.Concurrency, o.Slots, o.MaxPassOvers, o.MaxLongWait = 2, 2, 3, time.Hour
				aff := newFake(nil)
				o.Affinity = aff
				s := New(o)
				running := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))                // slot 0
				holder := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10, PrefixKey: key})) // slot 1, stays busy
				if running.Slot != 0 || holder.Slot != 1 || aff.Holder(key) != 1 {
					t.Fatalf("setup: slots %d,%d holder %d", running.Slot, holder.Slot, aff.Holder(key))
				}
				warm := start(s, t.Context(), Job{OutputCap: 10, PrefixKey: key})
				before := 0
				for step := 0; step < 10; step++ {
					var cold chan result
					if tc.coldJobs {
						cold = start(s, t.Context(), Job{OutputCap: 10, PrefixKey: uint64(100 + step)})
					}
					running.Release()
					synctest.Wait()
					if r, ok := ready(warm); ok {
						if r.err != nil {
							t.Fatal(r.err)
						}
						if before != tc.wantAfter || r.t.Slot != 0 {
							t.Fatalf("warm job admitted on slot %d after %d cold jobs, want slot 0 after %d",
								r.t.Slot, before, tc.wantAfter)
						}
						r.t.Release()
						holder.Release()
						if cold != nil {
							synctest.Wait()
							mustTicket(t, cold).Release()
						}
						return
					}
					running = mustTicket(t, cold)
					if running.Slot != 0 {
						t.Fatalf("cold job on slot %d, want 0", running.Slot)
					}
					before++
				}
				t.Fatalf("warm job still waiting after %d cold jobs", before)
			})
		})
	}
}

func TestDispatchDebugLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf syncBuffer
		o := base()
		o.Slots, o.Affinity = 1, newFake(nil)
		o.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s := New(o)
		running := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10, PrefixKey: 3}))
		waiting := start(s, t.Context(), Job{OutputCap: 10, PrefixKey: 3})
		running.Release()
		synctest.Wait()
		mustTicket(t, waiting).Release()
		out := buf.String()
		for _, want := range []string{
			"component=admission", "path=admit", "reason=immediate",
			"path=dispatch slot=0 prefix_key=3 score=1 reason=affine queue_len=0 pass_overs=0",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
