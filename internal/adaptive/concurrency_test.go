package adaptive

import (
	"strconv"
	"sync"
	"testing"
	"time"
)

func profileOpts() Options {
	return Options{
		TuningEnabled: true, SampleSize: 32, QueueLatencyThreshold: 600 * time.Millisecond,
		MinCompletionTokensPerSecond: 8, MaxOutputReductionRatio: 0.5, MinOutputTokens: 64,
		LearnedFamilyCapEnabled: true, FamilyHistorySize: 64, LearnedCapMinSamples: 8,
		ShortPercentile: 0.9, DraftPercentile: 0.95, HeadroomTokens: 24, ShortJobMaxTokens: 96,
	}
}

// TestConcurrentObserveCap runs Observe, Cap and Stats together over a small
// family LRU (so evictions race too); run it with -race. Every cap must stay
// within [min(requested, MinOutputTokens), requested].
func TestConcurrentObserveCap(t *testing.T) {
	o := profileOpts()
	o.MaxFamilies = 8
	tu := New(o)
	const workers, iters = 4, 2000
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range iters {
				fam := "f" + strconv.Itoa((w*7+i)%12)
				fr := "stop"
				if i%9 == 0 {
					fr = FinishLength
				}
				tu.Observe(Sample{Family: fam, Requested: 512, CompletionTokens: (i * 37) % 600, FinishReason: fr,
					QueueDelay: time.Duration(i%5) * 300 * time.Millisecond, TokensPerSecond: float64(i % 30)})
			}
		}()
		go func() {
			defer wg.Done()
			for i := range iters {
				req := 1 + (i*13)%1024
				got, _ := tu.Cap("f"+strconv.Itoa(i%12), req)
				if got > req || got < min(req, o.MinOutputTokens) {
					errs <- "cap " + strconv.Itoa(got) + " for request " + strconv.Itoa(req)
					return
				}
				if i%500 == 0 {
					_ = tu.Stats()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	st := tu.Stats()
	if st.Observed != workers*iters || st.Families > 8 {
		t.Fatalf("stats = %+v", st)
	}
	if total := st.CapsRequested + st.CapsLearned + st.CapsReduced + st.CapsLearnedReduced; total != workers*iters {
		t.Fatalf("cap counters sum to %d, want %d", total, workers*iters)
	}
}

// TestHotPathAllocs pins the allocation-free claims: Cap always, Observe
// once the family exists.
func TestHotPathAllocs(t *testing.T) {
	tu := New(profileOpts())
	s := Sample{Family: "email", Requested: 256, CompletionTokens: 80, FinishReason: "stop",
		QueueDelay: 700 * time.Millisecond, TokensPerSecond: 12}
	for range 64 {
		tu.Observe(s)
	}
	if got, why := tu.Cap("email", 256); why != ReasonLearnedReduced {
		t.Fatalf("setup: Cap = (%d, %q), want a learned and reduced cap", got, why)
	}
	if n := testing.AllocsPerRun(200, func() { tu.Cap("email", 256) }); n != 0 {
		t.Errorf("Cap allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(200, func() { tu.Cap("unknown", 256) }); n != 0 {
		t.Errorf("Cap (unknown family) allocates %v times per call", n)
	}
	if n := testing.AllocsPerRun(200, func() { tu.Observe(s) }); n != 0 {
		t.Errorf("Observe allocates %v times per call", n)
	}
}

func benchTuner(b *testing.B) *Tuner {
	tu := New(profileOpts())
	for i := range 64 {
		for f := range 16 {
			tu.Observe(Sample{Family: "family-" + strconv.Itoa(f), Requested: 512, CompletionTokens: 40 + i,
				FinishReason: "stop", QueueDelay: 700 * time.Millisecond, TokensPerSecond: 12})
		}
	}
	b.ReportAllocs()
	return tu
}

func BenchmarkCap(b *testing.B) {
	tu := benchTuner(b)
	for b.Loop() {
		tu.Cap("family-3", 512)
	}
}

func BenchmarkCapParallel(b *testing.B) {
	tu := benchTuner(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tu.Cap("family-3", 512)
		}
	})
}

func BenchmarkObserve(b *testing.B) {
	tu := benchTuner(b)
	s := Sample{Family: "family-3", Requested: 512, CompletionTokens: 90, FinishReason: "stop",
		QueueDelay: 700 * time.Millisecond, TokensPerSecond: 12}
	for b.Loop() {
		tu.Observe(s)
	}
}
