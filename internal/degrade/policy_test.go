package degrade

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/raygw/raygw/internal/config"
)

// profile1b are the 1b profile's RAY_DEGRADATION_* thresholds.
var profile1b = Thresholds{
	QueueDepth: 10, RSSMiB: 512, MemoryRatio: 0.9, CPUThrottledRatio: 0.2,
	MemoryPSISome: 10, MemoryPSIFull: 1, CPUPSISome: 50, CPUPSIFull: 5,
}

type fakeSnap Readings

func (f *fakeSnap) Snapshot() Readings { return Readings(*f) }

func below(v float64) float64 { return math.Nextafter(v, 0) }

// setSignal sets the named signal to v in r (or q for the queue).
func setSignal(r *Readings, q *int, name string, v float64) {
	switch name {
	case NameQueueDepth:
		*q = int(v)
	case NameRSS:
		r.RSSMiB = ok(v)
	case NameMemoryRatio:
		r.MemoryRatio = ok(v)
	case NameCPUThrottled:
		r.CPUThrottledRatio = ok(v)
	case NameMemoryPSISome:
		r.MemoryPSISome = ok(v)
	case NameMemoryPSIFull:
		r.MemoryPSIFull = ok(v)
	case NameCPUPSISome:
		r.CPUPSISome = ok(v)
	case NameCPUPSIFull:
		r.CPUPSIFull = ok(v)
	}
}

func newPolicy(r *Readings, q *int) *Policy {
	return New(Options{Enabled: true, Thresholds: profile1b, MaxTokens: 128, MaxPromptChars: 5000,
		Snapshot: (*fakeSnap)(r), QueueDepth: func() int { return *q }})
}

// TestThresholdEdges walks every signal across its threshold and its severe
// level: just below -> none, at -> clamp, just below severe -> clamp, at
// severe -> shed for memory signals and clamp for CPU and queue alone.
func TestThresholdEdges(t *testing.T) {
	signals := []struct {
		name             string
		threshold, sev   float64
		severeShedsAlone bool
	}{
		{NameQueueDepth, 10, 20, false},
		{NameRSS, 512, 1024, true},
		{NameMemoryRatio, 0.9, severeAt(0.9, 1, 2), true},
		{NameMemoryPSISome, 10, 20, true},
		{NameMemoryPSIFull, 1, 2, true},
		{NameCPUThrottled, 0.2, 0.4, false},
		{NameCPUPSISome, 50, 75, false},
		{NameCPUPSIFull, 5, 10, false},
	}
	for _, s := range signals {
		cases := []struct {
			label string
			v     float64
			want  Level
		}{
			{"zero", 0, None},
			{"just below threshold", below(s.threshold), None},
			{"at threshold", s.threshold, Clamp},
			{"just below severe", below(s.sev), Clamp},
			{"at severe", s.sev, map[bool]Level{true: Shed, false: Clamp}[s.severeShedsAlone]},
		}
		if s.name == NameQueueDepth { // integers: nextafter rounds down to the previous int
			cases[1].v, cases[3].v = s.threshold-1, s.sev-1
		}
		for _, c := range cases {
			t.Run(s.name+"/"+c.label, func(t *testing.T) {
				var r Readings
				q := 0
				setSignal(&r, &q, s.name, c.v)
				d := newPolicy(&r, &q).Decide()
				if d.Level != c.want {
					t.Fatalf("%s=%v: level %v, want %v (reasons %v)", s.name, c.v, d.Level, c.want, d.Reasons)
				}
				if c.want != None && (len(d.Reasons) != 1 || !strings.HasPrefix(d.Reasons[0], s.name+"=")) {
					t.Fatalf("reasons = %q, want one naming %s", d.Reasons, s.name)
				}
				if c.want == None && d.Reasons != nil {
					t.Fatalf("reasons at none: %q", d.Reasons)
				}
			})
		}
	}
}

func TestSeverityCombinations(t *testing.T) {
	tests := []struct {
		name    string
		set     map[string]float64
		want    Level
		reasons []string
	}{
		{"cpu severe + queue severe sheds", map[string]float64{NameCPUPSISome: 80, NameQueueDepth: 20}, Shed,
			[]string{"queue_depth=20>=20 severe", "cpu_psi_some=80>=75 severe"}},
		{"throttling severe + queue severe sheds", map[string]float64{NameCPUThrottled: 0.5, NameQueueDepth: 25}, Shed,
			[]string{"queue_depth=25>=20 severe", "cpu_throttled_ratio=0.5>=0.4 severe"}},
		{"cpu severe + queue over only clamps", map[string]float64{NameCPUPSIFull: 10, NameQueueDepth: 19}, Clamp,
			[]string{"queue_depth=19>=10", "cpu_psi_full=10>=10 severe"}},
		{"all cpu signals severe, no queue: clamp", map[string]float64{NameCPUPSIFull: 50, NameCPUPSISome: 99, NameCPUThrottled: 1}, Clamp,
			[]string{"cpu_throttled_ratio=1>=0.4 severe", "cpu_psi_full=50>=10 severe", "cpu_psi_some=99>=75 severe"}},
		{"memory over + cpu over + queue over: clamp", map[string]float64{NameMemoryRatio: 0.91, NameCPUPSISome: 60, NameQueueDepth: 12}, Clamp,
			[]string{"queue_depth=12>=10", "memory_ratio=0.91>=0.9", "cpu_psi_some=60>=50"}},
		{"one memory signal severe among several", map[string]float64{NameMemoryPSISome: 11, NameMemoryPSIFull: 2.5}, Shed,
			[]string{"memory_psi_full=2.5>=2 severe", "memory_psi_some=11>=10"}},
		{"nothing over", map[string]float64{NameCPUPSISome: 49.99, NameQueueDepth: 9, NameRSS: 100}, None, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Readings
			q := 0
			for k, v := range tt.set {
				setSignal(&r, &q, k, v)
			}
			d := newPolicy(&r, &q).Decide()
			if d.Level != tt.want {
				t.Fatalf("level %v, want %v", d.Level, tt.want)
			}
			if diff := cmp.Diff(tt.reasons, d.Reasons); diff != "" {
				t.Fatalf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnavailableAndDisabled(t *testing.T) {
	severe := Readings{MemoryRatio: ok(1), MemoryPSIFull: ok(90), CPUPSISome: ok(100), RSSMiB: ok(1e6)}
	unavailable := Readings{MemoryRatio: Signal{Value: 1}, MemoryPSIFull: Signal{Value: 90}, RSSMiB: Signal{Value: 1e6}}
	q := 1000
	tests := []struct {
		name string
		opts Options
		want Level
	}{
		{"disabled ignores everything", Options{Enabled: false, Thresholds: profile1b, Snapshot: (*fakeSnap)(&severe),
			QueueDepth: func() int { return q }}, None},
		{"unavailable signals are not pressure", Options{Enabled: true, Thresholds: profile1b, Snapshot: (*fakeSnap)(&unavailable)}, None},
		{"nil snapshot and queue", Options{Enabled: true, Thresholds: profile1b}, None},
		{"zero thresholds turn checks off", Options{Enabled: true, Snapshot: (*fakeSnap)(&severe),
			QueueDepth: func() int { return q }}, None},
		{"queue alone via func", Options{Enabled: true, Thresholds: profile1b, QueueDepth: func() int { return q }}, Clamp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := New(tt.opts).Decide().Level; got != tt.want {
				t.Fatalf("level %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecisionApply(t *testing.T) {
	var r Readings
	q := 0
	p := newPolicy(&r, &q)

	none := p.Decide()
	if err := none.Check(1_000_000); err != nil {
		t.Fatalf("none refused a long prompt: %v", err)
	}
	if got := none.ClampMaxTokens(4096); got != 4096 {
		t.Fatalf("none clamped max_tokens to %d", got)
	}
	if none.Header() != "none" {
		t.Fatalf("header %q", none.Header())
	}

	q = 12
	clamp := p.Decide()
	for _, c := range []struct{ in, want int }{{4096, 128}, {128, 128}, {100, 100}, {0, 128}, {-1, 128}} {
		if got := clamp.ClampMaxTokens(c.in); got != c.want {
			t.Errorf("ClampMaxTokens(%d) = %d, want %d", c.in, got, c.want)
		}
	}
	if err := clamp.Check(5000); err != nil {
		t.Fatalf("prompt at the limit refused: %v", err)
	}
	err := clamp.Check(5001)
	var ref *Refusal
	if !errors.Is(err, ErrPromptTooLarge) || !errors.As(err, &ref) {
		t.Fatalf("Check(5001) = %v, want a *Refusal wrapping ErrPromptTooLarge", err)
	}
	if ref.Status != http.StatusRequestEntityTooLarge || !strings.Contains(ref.Message, "at most 5000 characters") ||
		!strings.Contains(ref.Message, "has 5001") || ref.RetryAfterSeconds() != 10 {
		t.Fatalf("refusal = %+v", ref)
	}
	if got, want := clamp.Header(), "clamp; queue_depth=12>=10"; got != want {
		t.Fatalf("header %q, want %q", got, want)
	}

	r.MemoryRatio = ok(0.99)
	shed := p.Decide()
	err = shed.Check(1)
	if !errors.Is(err, ErrShed) || !errors.As(err, &ref) || ref.Status != http.StatusServiceUnavailable {
		t.Fatalf("shed Check = %v", err)
	}
	if !strings.Contains(ref.Message, "memory_ratio=0.99>=0.95 severe") || !strings.HasPrefix(ref.Message, "raygw ") {
		t.Fatalf("shed message %q", ref.Message)
	}

	st := p.Stats()
	if st.Level != Shed || st.None != 1 || st.Clamp != 1 || st.Shed != 1 || st.PromptRefusals != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestStatsAndFromConfig(t *testing.T) {
	cfg := &config.Config{Degradation: config.Degradation{
		Enabled: true, QueueDepthThreshold: 3, MaxPromptChars: 77, MaxTokens: 11, MemoryRSSThresholdMiB: 100,
		MemoryCgroupPressureRatioThreshold: 0.8, CPUThrottledRatioThreshold: 0.3,
		MemoryPSISomeAvg10Threshold: 4, MemoryPSIFullAvg10Threshold: 2, CPUPSISomeAvg10Threshold: 6, CPUPSIFullAvg10Threshold: 0,
	}}
	r := Readings{RSSMiB: ok(50), CPUPSISome: ok(6)}
	p := FromConfig(cfg, (*fakeSnap)(&r), func() int { return 1 })
	d := p.Decide()
	if d.Level != Clamp || d.MaxTokens != 11 || d.MaxPromptChars != 77 || d.RetryAfter != 10*time.Second {
		t.Fatalf("decision = %+v", d)
	}
	got := map[string]SignalStat{}
	for _, s := range p.Stats().Signals {
		got[s.Name] = s
	}
	want := map[string]SignalStat{
		NameQueueDepth:    {NameQueueDepth, 1, true, 3, 6},
		NameRSS:           {NameRSS, 50, true, 100, 200},
		NameMemoryRatio:   {NameMemoryRatio, 0, false, 0.8, 0.9},
		NameCPUThrottled:  {NameCPUThrottled, 0, false, 0.3, 0.6},
		NameMemoryPSISome: {NameMemoryPSISome, 0, false, 4, 8},
		NameMemoryPSIFull: {NameMemoryPSIFull, 0, false, 2, 4},
		NameCPUPSISome:    {NameCPUPSISome, 6, true, 6, 12},
		NameCPUPSIFull:    {NameCPUPSIFull, 0, false, 0, 0},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Fatalf("signals (-want +got):\n%s", diff)
	}
}

func TestLevelString(t *testing.T) {
	for l, want := range map[Level]string{None: "none", Clamp: "clamp", Shed: "shed", 7: "level(7)"} {
		if l.String() != want {
			t.Errorf("%d.String() = %q, want %q", l, l.String(), want)
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	for _, bc := range []struct {
		name string
		r    Readings
		q    int
	}{
		{"none", Readings{MemoryRatio: ok(0.5), CPUPSISome: ok(10), RSSMiB: ok(100)}, 2},
		{"clamp", Readings{MemoryRatio: ok(0.5), CPUPSISome: ok(60), RSSMiB: ok(100)}, 12},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := newPolicy(&bc.r, &bc.q)
			b.ReportAllocs()
			for b.Loop() {
				_ = p.Decide()
			}
		})
	}
}
