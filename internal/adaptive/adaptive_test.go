package adaptive

import (
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time      { return c.t }
func (c *fakeClock) Add(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

// learnOpts are the 1b profile's family settings (tuning off).
func learnOpts(clk *fakeClock) Options {
	return Options{
		LearnedFamilyCapEnabled: true, FamilyHistorySize: 64, LearnedCapMinSamples: 8,
		ShortPercentile: 0.9, DraftPercentile: 0.95, HeadroomTokens: 24, ShortJobMaxTokens: 96,
		MinOutputTokens: 1, Now: clk.Now,
	}
}

// obs is a compact sample: completion tokens and whether it was truncated.
type obs struct {
	tokens    int
	truncated bool
}

func stops(lens ...int) []obs {
	out := make([]obs, len(lens))
	for i, l := range lens {
		out[i] = obs{tokens: l}
	}
	return out
}

func seq(from, to, step int) []int {
	var out []int
	for v := from; v <= to; v += step {
		out = append(out, v)
	}
	return out
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func feed(t *Tuner, fam string, samples []obs) {
	for _, s := range samples {
		fr := "stop"
		if s.truncated {
			fr = FinishLength
		}
		t.Observe(Sample{Family: fam, Requested: max(s.tokens, 1), CompletionTokens: s.tokens, FinishReason: fr})
	}
}

func TestLearnedCaps(t *testing.T) {
	tests := []struct {
		name       string
		mod        func(*Options)
		family     string
		samples    []obs
		requested  int
		want       int
		wantReason string
		wantShort  bool
	}{
		{"below min samples: nothing learned", nil, "f", stops(seq(10, 70, 10)...), 512, 512, ReasonRequested, false},
		{"short family uses p90", nil, "f", stops(seq(10, 100, 10)...), 512, 90 + 24, ReasonLearned, true},
		{"draft family uses p95", nil, "f", stops(seq(100, 2000, 100)...), 4096, 1900 + 24, ReasonLearned, false},
		{"never above the request", nil, "f", stops(seq(100, 2000, 100)...), 1000, 1000, ReasonRequested, false},
		{"median exactly at the short limit is short", nil, "f",
			stops(append(repeat(96, 5), repeat(200, 5)...)...), 512, 200 + 24, ReasonLearned, true},
		{"censored sample does not lower the cap", nil, "f",
			append(stops(seq(10, 90, 10)...), obs{5, true}), 512, 90 + 24, ReasonLearned, true},
		{"censored at the percentile: no cap", nil, "f",
			append(stops(repeat(30, 8)...), obs{32, true}, obs{32, true}), 512, 512, ReasonRequested, true},
		{"censored majority: no cap", nil, "f",
			append(stops(repeat(30, 3)...), obs{40, true}, obs{40, true}, obs{40, true}, obs{40, true}, obs{40, true},
				obs{40, true}), 512, 512, ReasonRequested, false},
		{"min output tokens floors a learned cap", func(o *Options) { o.MinOutputTokens = 64 }, "f",
			stops(repeat(5, 8)...), 512, 64, ReasonLearned, true},
		{"floor never raises above the request", func(o *Options) { o.MinOutputTokens = 64 }, "f",
			stops(repeat(5, 8)...), 50, 50, ReasonRequested, true},
		{"old answers roll out of the history", func(o *Options) { o.FamilyHistorySize = 8 }, "f",
			stops(append(repeat(500, 8), repeat(20, 8)...)...), 512, 20 + 24, ReasonLearned, true},
		{"no short limit: every family is a draft", func(o *Options) { o.ShortJobMaxTokens = 0 }, "f",
			stops(seq(10, 200, 10)...), 512, 190 + 24, ReasonLearned, false},
		{"empty family not learned", nil, "", stops(repeat(5, 20)...), 512, 512, ReasonRequested, false},
		{"learning disabled", func(o *Options) { o.LearnedFamilyCapEnabled = false }, "f",
			stops(repeat(5, 20)...), 512, 512, ReasonRequested, false},
		{"overlong family name not learned", nil, strings.Repeat("x", MaxFamilyBytes+1),
			stops(repeat(5, 20)...), 512, 512, ReasonRequested, false},
		{"unset request passes through", nil, "f", stops(repeat(5, 20)...), 0, 0, ReasonRequested, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := learnOpts(newClock())
			if tt.mod != nil {
				tt.mod(&o)
			}
			tu := New(o)
			feed(tu, tt.family, tt.samples)
			got, why := tu.Cap(tt.family, tt.requested)
			if got != tt.want || why != tt.wantReason {
				t.Fatalf("Cap = (%d, %q), want (%d, %q)", got, why, tt.want, tt.wantReason)
			}
			if fs, ok := tu.Family(tt.family); ok && fs.Short != tt.wantShort {
				t.Fatalf("short = %v, want %v (%+v)", fs.Short, tt.wantShort, fs)
			}
		})
	}
}

// tuneOpts: a window of 8 (judged from 2 fresh samples), the 1b thresholds.
func tuneOpts(clk *fakeClock) Options {
	return Options{
		TuningEnabled: true, SampleSize: 8, QueueLatencyThreshold: 600 * time.Millisecond,
		MinCompletionTokensPerSecond: 8, MaxOutputReductionRatio: 0.5, MinOutputTokens: 64, Now: clk.Now,
	}
}

func TestGlobalReduction(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name      string
		delays    []time.Duration
		tps       []float64
		requested int
		want      int
		reason    string
	}{
		{"no pressure", []time.Duration{100 * ms, 100 * ms}, []float64{20, 20}, 512, 512, ReasonRequested},
		{"p50 exactly at the threshold", []time.Duration{600 * ms, 600 * ms}, []float64{20, 20}, 512, 512, ReasonRequested},
		{"p50 1.5x threshold: half the max cut", []time.Duration{900 * ms, 900 * ms}, []float64{20, 20}, 512, 384, ReasonReduced},
		{"p50 2x threshold: the max cut", []time.Duration{1200 * ms, 1200 * ms}, []float64{20, 20}, 512, 256, ReasonReduced},
		{"far past: still bounded by the max ratio", []time.Duration{60 * time.Second, 60 * time.Second}, []float64{20, 20}, 512, 256, ReasonReduced},
		{"slow decode: half speed", []time.Duration{0, 0}, []float64{4, 4}, 512, 384, ReasonReduced},
		{"speed exactly at the floor", []time.Duration{0, 0}, []float64{8, 8}, 512, 512, ReasonRequested},
		{"unknown speed ignored", []time.Duration{0, 0}, []float64{0, 0}, 512, 512, ReasonRequested},
		{"the worse of the two wins", []time.Duration{900 * ms, 900 * ms}, []float64{2, 2}, 512, 320, ReasonReduced},
		{"never below min output tokens", []time.Duration{5 * time.Second, 5 * time.Second}, []float64{20, 20}, 100, 64, ReasonReduced},
		{"a request under the floor is left alone", []time.Duration{5 * time.Second, 5 * time.Second}, []float64{20, 20}, 50, 50, ReasonRequested},
		{"one sample is not enough", []time.Duration{5 * time.Second}, []float64{1}, 512, 512, ReasonRequested},
		{"p50 ignores a slow minority", []time.Duration{9 * time.Second, 9 * time.Second, 9 * time.Second, 0, 0, 0, 0, 0},
			[]float64{20, 20, 20, 20, 20, 20, 20, 20}, 512, 512, ReasonRequested},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tu := New(tuneOpts(newClock()))
			for i, d := range tt.delays {
				tu.Observe(Sample{Requested: 512, CompletionTokens: 100, FinishReason: "stop", QueueDelay: d, TokensPerSecond: tt.tps[i]})
			}
			got, why := tu.Cap("any", tt.requested)
			if got != tt.want || why != tt.reason {
				t.Fatalf("Cap = (%d, %q), want (%d, %q); stats %+v", got, why, tt.want, tt.reason, tu.Stats())
			}
			if r := tu.Stats().Reduction; r < 0 || r > 0.5 {
				t.Fatalf("reduction %v outside [0, 0.5]", r)
			}
		})
	}
}

func TestRecovery(t *testing.T) {
	clk := newClock()
	tu := New(tuneOpts(clk))
	slow := Sample{Requested: 512, CompletionTokens: 100, QueueDelay: 2 * time.Second, TokensPerSecond: 20}
	fast := Sample{Requested: 512, CompletionTokens: 100, QueueDelay: 10 * time.Millisecond, TokensPerSecond: 20}
	for range 8 {
		tu.Observe(slow)
	}
	if got, _ := tu.Cap("", 512); got != 256 {
		t.Fatalf("under pressure Cap = %d, want 256", got)
	}
	// Pressure goes: fast samples push the slow ones out of the p50.
	for i := range 8 {
		clk.Add(time.Second)
		tu.Observe(fast)
		got, _ := tu.Cap("", 512)
		if i < 3 && got != 256 {
			t.Fatalf("after %d fast samples Cap = %d, want still 256", i+1, got)
		}
		if i >= 4 && got != 512 {
			t.Fatalf("after %d fast samples Cap = %d, want recovered 512", i+1, got)
		}
	}

	// Idle recovery: pressure, then no traffic for longer than MaxSampleAge.
	for range 8 {
		tu.Observe(slow)
	}
	if got, _ := tu.Cap("", 512); got != 256 {
		t.Fatalf("under pressure again Cap = %d, want 256", got)
	}
	clk.Add(DefaultMaxSampleAge - time.Second)
	if got, _ := tu.Cap("", 512); got != 256 {
		t.Fatalf("just before the samples age out Cap = %d, want 256", got)
	}
	clk.Add(2 * time.Second)
	if got, why := tu.Cap("", 512); got != 512 || why != ReasonRequested {
		t.Fatalf("idle past MaxSampleAge Cap = (%d, %q), want (512, requested)", got, why)
	}
	if st := tu.Stats(); st.Reduction != 0 || st.WindowSamples != 0 {
		t.Fatalf("stats after idle = %+v", st)
	}
}

func TestLearnedAndReduced(t *testing.T) {
	clk := newClock()
	o := tuneOpts(clk)
	l := learnOpts(clk)
	o.LearnedFamilyCapEnabled, o.FamilyHistorySize, o.LearnedCapMinSamples = true, l.FamilyHistorySize, l.LearnedCapMinSamples
	o.ShortPercentile, o.DraftPercentile, o.HeadroomTokens, o.ShortJobMaxTokens = 0.9, 0.95, 24, 96
	tu := New(o)
	for range 8 {
		tu.Observe(Sample{Family: "essay", Requested: 1024, CompletionTokens: 376, FinishReason: "stop",
			QueueDelay: 1200 * time.Millisecond, TokensPerSecond: 20})
	}
	if got, why := tu.Cap("essay", 1024); got != 200 || why != ReasonLearnedReduced {
		t.Fatalf("Cap = (%d, %q), want (200, learned+reduced): learned 400, halved", got, why)
	}
	st := tu.Stats()
	if st.Observed != 8 || st.Families != 1 || st.LearnedFamilies != 1 || st.CapsLearnedReduced != 1 || st.Reduction != 0.5 {
		t.Fatalf("stats = %+v", st)
	}
	if fs, _ := tu.Family("essay"); fs != (FamilyStats{Samples: 8, Cap: 400}) {
		t.Fatalf("family stats = %+v", fs)
	}
}

func TestFamiliesBounded(t *testing.T) {
	o := learnOpts(newClock())
	o.MaxFamilies = 4
	tu := New(o)
	for i := range 10 {
		feed(tu, string(rune('a'+i)), stops(repeat(5, 8)...))
	}
	if st := tu.Stats(); st.Families != 4 || st.LearnedFamilies != 4 {
		t.Fatalf("stats = %+v, want 4 families", st)
	}
	if _, ok := tu.Family("a"); ok {
		t.Fatal("oldest family not evicted")
	}
	if got, _ := tu.Cap("j", 512); got != 29 {
		t.Fatalf("newest family Cap = %d, want 29", got)
	}
}

func TestFromConfig(t *testing.T) {
	cfg := &config.Config{
		Scheduler: config.Scheduler{ShortJobMaxTokens: 96},
		Adaptive: config.Adaptive{
			Enabled: true, SampleSize: 32, QueueLatencyThresholdMS: 600, MinCompletionTokensPerSecond: 8,
			MaxOutputReductionRatio: 0.5, MinOutputTokens: 64, LearnedFamilyCapEnabled: true, FamilyHistorySize: 64,
			LearnedCapMinSamples: 8, DraftPercentile: 0.95, ShortPercentile: 0.9, LearnedCapHeadroomTokens: 24,
		},
	}
	tu := FromConfig(cfg)
	o := tu.opts
	if o.QueueLatencyThreshold != 600*time.Millisecond || o.SampleSize != 32 || o.MinOutputTokens != 64 ||
		o.ShortJobMaxTokens != 96 || o.HeadroomTokens != 24 || o.DraftPercentile != 0.95 || o.ShortPercentile != 0.9 ||
		!o.TuningEnabled || !o.LearnedFamilyCapEnabled || o.MaxFamilies != DefaultMaxFamilies {
		t.Fatalf("options = %+v", o)
	}
	feed(tu, "qa", stops(seq(10, 80, 10)...))
	if got, why := tu.Cap("qa", 512); got != 80+24 || why != ReasonLearned {
		t.Fatalf("Cap = (%d, %q), want (104, learned)", got, why)
	}
}

func TestRankIndex(t *testing.T) {
	for _, c := range []struct {
		n    int
		p    float64
		want int
	}{{10, 0.9, 8}, {10, 0.95, 9}, {64, 0.9, 57}, {64, 0.95, 60}, {8, 0.5, 3}, {1, 0.5, 0}, {5, 0, 0}, {5, 1, 4}} {
		if got := rankIndex(c.n, c.p); got != c.want {
			t.Errorf("rankIndex(%d, %v) = %d, want %d", c.n, c.p, got, c.want)
		}
	}
}
