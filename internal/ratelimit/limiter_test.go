package ratelimit

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is an injected clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time)     { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// epoch is a window-aligned instant (a multiple of a minute since 1970).
var epoch = time.Unix(1_700_000_000-1_700_000_000%60, 0)

func newTest(t *testing.T, max, keys int) (*Limiter, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: epoch}
	l, err := New(Options{Window: time.Minute, Max: max, MaxKeys: keys, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return l, clk
}

func TestNewRejects(t *testing.T) {
	for _, o := range []Options{
		{Window: 0, Max: 1, MaxKeys: 1},
		{Window: time.Second, Max: 0, MaxKeys: 1},
		{Window: time.Second, Max: 1, MaxKeys: 0},
		{Window: 1000 * time.Hour, Max: 1 << 30, MaxKeys: 1},
	} {
		if _, err := New(o); !errors.Is(err, ErrOptions) {
			t.Errorf("New(%+v) error = %v, want ErrOptions", o, err)
		}
	}
}

func TestSlidingWindow(t *testing.T) {
	type step struct {
		at        time.Duration // since epoch
		allowed   bool
		remaining int
		retry     time.Duration
		reset     time.Duration
	}
	tests := []struct {
		name  string
		max   int
		steps []step
	}{
		{"fills then denies", 3, []step{
			{0, true, 2, 0, 2 * time.Minute},
			{time.Second, true, 1, 0, 2*time.Minute - time.Second},
			{2 * time.Second, true, 0, 0, 2*time.Minute - 2*time.Second},
			// cur=3 > max-1: wait for the next window until 3×(1−g) ≤ 2, g = 1/3.
			{3 * time.Second, false, 0, 57*time.Second + 20*time.Second, 2*time.Minute - 3*time.Second},
		}},
		{"previous window slides out", 3, []step{
			{0, true, 2, 0, 2 * time.Minute},
			{1, true, 1, 0, 2*time.Minute - 1},
			{2, true, 0, 0, 2*time.Minute - 2},
			// Next window start: estimate 3, denied until 20 s in.
			{time.Minute, false, 0, 20 * time.Second, time.Minute},
			{time.Minute + 20*time.Second - 1, false, 0, 1, 40*time.Second + 1},
			{time.Minute + 20*time.Second, true, 0, 0, 2*time.Minute - 20*time.Second},
			// After the boundary burst is gone, a fresh key state far later.
			{10 * time.Minute, true, 2, 0, 2 * time.Minute},
		}},
		{"max one", 1, []step{
			{30 * time.Second, true, 0, 0, 90 * time.Second},
			{31 * time.Second, false, 0, 89 * time.Second, 89 * time.Second},
			{2 * time.Minute, true, 0, 0, 2 * time.Minute},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, clk := newTest(t, tt.max, 8)
			for i, s := range tt.steps {
				clk.Set(epoch.Add(s.at))
				d := l.Allow("k")
				want := Decision{Allowed: s.allowed, Limit: tt.max, Remaining: s.remaining, RetryAfter: s.retry, Reset: s.reset}
				if d != want {
					t.Fatalf("step %d at %v: got %+v, want %+v", i, s.at, d, want)
				}
			}
		})
	}
}

// TestRetryAfterIsExact checks on random histories that a denied key stays
// denied until exactly RetryAfter has passed, and is allowed then.
func TestRetryAfterIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		max := 1 + rng.IntN(10)
		l, clk := newTest(t, max, 4)
		denials := 0
		for range 200 {
			clk.Add(time.Duration(rng.Int64N(int64(10 * time.Second))))
			d := l.Allow("k")
			if d.Allowed {
				continue
			}
			denials++
			if d.RetryAfter <= 0 || d.RetryAfter > 2*time.Minute {
				t.Fatalf("trial %d: RetryAfter %v out of range", trial, d.RetryAfter)
			}
			if d.RetryAfter > 1 {
				clk.Add(d.RetryAfter - 1)
				if l.Allow("k").Allowed {
					t.Fatalf("trial %d: allowed 1ns before RetryAfter", trial)
				}
				clk.Add(1)
			} else {
				clk.Add(d.RetryAfter)
			}
			if !l.Allow("k").Allowed {
				t.Fatalf("trial %d (max %d): denied at RetryAfter %v", trial, max, d.RetryAfter)
			}
		}
		if denials == 0 && max < 3 {
			t.Fatalf("trial %d: history produced no denial; the test checks nothing", trial)
		}
	}
}

// TestNeverMoreThanMaxPerWindow: whatever the arrival pattern, no fixed
// window admits more than Max, and no sliding window more than 2×Max.
func TestNeverMoreThanMaxPerWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	l, clk := newTest(t, 5, 4)
	var admitted []time.Time
	for range 20000 {
		clk.Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
		if l.Allow("k").Allowed {
			admitted = append(admitted, clk.Now())
		}
	}
	perWindow := map[int64]int{}
	for i, a := range admitted {
		w := a.UnixNano() / int64(time.Minute)
		perWindow[w]++
		if perWindow[w] > 5 {
			t.Fatalf("window %d admitted %d > 5", w, perWindow[w])
		}
		if i >= 10 && a.Sub(admitted[i-10]) < time.Minute {
			t.Fatalf("11 admissions within one minute ending at %v", a)
		}
	}
	if len(admitted) < 100 {
		t.Fatalf("only %d admitted; limiter too strict", len(admitted))
	}
}

func TestKeysAreIndependentAndBounded(t *testing.T) {
	l, _ := newTest(t, 1, 2)
	for _, k := range []string{"a", "b"} {
		if !l.Allow(k).Allowed {
			t.Fatalf("first request of %s denied", k)
		}
	}
	if l.Allow("a").Allowed {
		t.Fatal("second request of a allowed")
	}
	// c evicts the least recently used key, b; a stays limited.
	if !l.Allow("c").Allowed || l.Allow("a").Allowed {
		t.Fatal("c should be allowed and a still limited")
	}
	if !l.Allow("b").Allowed {
		t.Fatal("b was evicted, so it starts fresh")
	}
	s := l.Stats()
	if s.Tracked != 2 || s.Evictions != 2 || s.Allowed != 4 || s.Denied != 2 {
		t.Fatalf("stats = %+v", s)
	}
}

func TestConcurrentAllow(t *testing.T) {
	l, _ := newTest(t, 100, 1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for i := range 50 {
				if l.Allow("shared").Allowed {
					n++
				}
				l.Allow(fmt.Sprint(g, i))
			}
			mu.Lock()
			allowed += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if allowed != 100 {
		t.Fatalf("allowed %d of 400 on one key, want exactly 100", allowed)
	}
}

func BenchmarkAllow(b *testing.B) {
	l, err := New(Options{Window: time.Minute, Max: 75, MaxKeys: 4096})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = fmt.Sprintf("203.0.%d.%d|k:%08x", i/256, i%256, i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.Allow(keys[i%len(keys)])
		i++
	}
}
