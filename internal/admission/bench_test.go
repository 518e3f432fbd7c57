package admission

import (
	"context"
	"testing"
	"time"
)

// BenchmarkAdmitRelease is the uncontended path: a free place, no window.
func BenchmarkAdmitRelease(b *testing.B) {
	s := New(Options{Concurrency: 1, MaxQueue: 40, MaxQueuedTokens: 18000, MaxInflightTokens: 2048,
		RequestTimeout: time.Minute, ShortJobMaxTokens: 96, Slots: 1})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		t, err := s.Acquire(ctx, Job{PromptTokens: 100, OutputCap: 64})
		if err != nil {
			b.Fatal(err)
		}
		t.Release()
	}
}

// BenchmarkAdmitReleaseContended makes 4x GOMAXPROCS goroutines share one
// place, so most acquisitions wait in the queue.
func BenchmarkAdmitReleaseContended(b *testing.B) {
	s := New(Options{Concurrency: 1, MaxQueue: 1024, RequestTimeout: time.Minute,
		ShortJobMaxTokens: 96, AffinityLookahead: 12, Slots: 1})
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			i++
			t, err := s.Acquire(ctx, Job{PromptTokens: 100, OutputCap: 32 + (i%2)*100, PrefixKey: uint64(i % 5)})
			if err != nil {
				b.Error(err)
				return
			}
			t.Release()
		}
	})
}

// BenchmarkPick is one decision over a full 40-job queue with lookahead 12.
func BenchmarkPick(b *testing.B) {
	now := time.Now()
	q := make([]*waiter, 40)
	for i := range q {
		q[i] = &waiter{job: Job{OutputCap: 50 + (i%3)*100, PrefixKey: uint64(i)}, tokens: 200,
			short: i%3 == 0, seq: uint64(i), arrived: now.Add(time.Duration(i) * time.Millisecond)}
	}
	p := policy{now: now.Add(time.Second), budgetLeft: 2048, lookahead: 12, maxPassOvers: 8,
		maxLongWait: 8 * time.Second, affinity: newFake(map[[2]uint64]float64{{1, 30}: 1})}
	b.ReportAllocs()
	for b.Loop() {
		if d := p.pick(q, []int{0, 1}); d.index < 0 {
			b.Fatal("no pick")
		}
	}
}
