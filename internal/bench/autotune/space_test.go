package autotune

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/raygw/raygw/internal/bench/workload"
)

// testBase is a 1b-like configuration with every searched setting.
func testBase() map[string]string {
	return map[string]string{
		SchedConcurrency: "1", SchedBatchWindowMS: "5", SchedInflightTok: "2048", SchedQueuedTok: "18000",
		SchedShortJobTok: "96", SchedSlotAffinity: "true",
		LlamaParallel: "1", LlamaCtxSize: "2048", LlamaBatchSize: "192", LlamaUBatchSize: "96",
		LlamaThreads: "2", LlamaThreadsBatch: "2", LlamaCacheReuse: "192", LlamaUnifiedKV: "true",
		"RAY_MODEL_ID": "ignored",
	}
}

func with(base map[string]string, kv ...string) map[string]string {
	out := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func labels(p *Plan) []string {
	out := make([]string, len(p.Candidates))
	for i, c := range p.Candidates {
		out[i] = c.Label()
	}
	return out
}

func TestBasePoint(t *testing.T) {
	tests := []struct {
		name    string
		base    map[string]string
		wantErr string
	}{
		{"ok", testBase(), ""},
		{"missing", func() map[string]string { b := testBase(); delete(b, LlamaThreads); return b }(), LlamaThreads + " missing"},
		{"bad int", with(testBase(), SchedConcurrency, "two"), SchedConcurrency + ": expected a whole number"},
		{"bad bool", with(testBase(), LlamaUnifiedKV, "maybe"), LlamaUnifiedKV + ": expected true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := BasePoint(tt.base)
			if tt.wantErr == "" {
				if err != nil || p[LlamaCtxSize] != 2048 || p[LlamaUnifiedKV] != 1 {
					t.Fatalf("BasePoint = %v, %v", p, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestAlternatives(t *testing.T) {
	m := Machine{VCPUs: 4}
	base, _ := BasePoint(testBase())
	tests := []struct {
		knob string
		cur  int
		want []int
	}{
		// closest first by relative change, then the smaller value
		{SchedConcurrency, 1, []int{2, 3, 4}},
		{SchedBatchWindowMS, 5, []int{2, 0, 10, 20}},
		{SchedInflightTok, 2048, []int{1024, 4096}},
		{SchedShortJobTok, 0, []int{32, 64, 128}},
		{SchedShortJobTok, 96, []int{48, 0, 192}},
		{SchedSlotAffinity, 1, []int{0}},
		{LlamaParallel, 1, []int{2, 3, 4}},
		{LlamaParallel, 4, []int{3, 2, 1, 8}},
		{LlamaThreads, 2, []int{1, 3, 4}},
		{LlamaCacheReuse, 0, []int{64, 256}},
	}
	for _, tt := range tests {
		t.Run(tt.knob, func(t *testing.T) {
			k, _ := knobByName(tt.knob)
			got := alternatives(k, tt.cur, base, m)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("alternatives(%s=%d) (-want +got):\n%s", tt.knob, tt.cur, diff)
			}
		})
	}
}

func TestGenerateOrderAndCap(t *testing.T) {
	s := Space{Mode: ModeScheduler, Base: testBase(), Machine: Machine{VCPUs: 2}, Need: Need{LargestRequestTokens: 300}, Max: 8}
	p, err := s.Generate()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"current",
		"SCHEDULER_MAX_INFLIGHT_TOKENS=1024", // 0.5
		"SCHEDULER_MAX_QUEUED_TOKENS=9000",   // 0.5
		"SCHEDULER_SHORT_JOB_MAX_TOKENS=48",  // 0.5
		"SCHEDULER_BATCH_WINDOW_MS=2",        // 0.6
		"SCHEDULER_CONCURRENCY=2",            // 1, knob order breaks the tie
		"SCHEDULER_BATCH_WINDOW_MS=0",
		"SCHEDULER_BATCH_WINDOW_MS=10",
	}
	if diff := cmp.Diff(want, labels(p)); diff != "" {
		t.Fatalf("candidates (-want +got):\n%s", diff)
	}
	for i, c := range p.Candidates {
		if c.Index != i {
			t.Errorf("candidate %d has index %d", i, c.Index)
		}
		if i > 0 && c.Distance.Less(p.Candidates[i-1].Distance) {
			t.Errorf("candidate %d (%v) closer than %d (%v)", i, c.Distance, i-1, p.Candidates[i-1].Distance)
		}
	}
	if p.Complete {
		t.Error("a capped plan reports Complete")
	}
}

func TestGenerateLevelsAndModes(t *testing.T) {
	t.Run("scheduler mode never changes the launch profile", func(t *testing.T) {
		s := Space{Mode: ModeScheduler, Base: testBase(), Machine: Machine{VCPUs: 8}, Max: 5000}
		p, err := s.Generate()
		if err != nil {
			t.Fatal(err)
		}
		// 6 knobs with 3, 4, 2, 2, 3 and 1 alternatives and no binding
		// constraint: 4*5*3*3*4*2 = 1440 candidates, the baseline included.
		if !p.Complete || len(p.Candidates) != 1440 || p.Valid != 1439 || p.Rejected != 0 {
			t.Fatalf("complete=%v candidates=%d valid=%d rejected=%d", p.Complete, len(p.Candidates), p.Valid, p.Rejected)
		}
		for _, c := range p.Candidates {
			for _, ch := range c.Changes {
				if strings.HasPrefix(ch.Name, "RAY_LLAMA_CPP_") {
					t.Fatalf("candidate %d changes %s", c.Index, ch.Name)
				}
			}
		}
		if last := p.Candidates[len(p.Candidates)-1]; last.Distance.Changed != 6 {
			t.Errorf("the farthest candidate changes %d settings, want all 6", last.Distance.Changed)
		}
	})
	t.Run("full mode reaches launch settings", func(t *testing.T) {
		s := Space{Mode: ModeFull, Base: testBase(), Machine: Machine{VCPUs: 2}, Max: 64}
		p, err := s.Generate()
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(labels(p), "|")
		for _, want := range []string{"LLAMA_CPP_CTX_SIZE=1024", "LLAMA_CPP_PARALLEL=2", "LLAMA_CPP_THREADS=1", "LLAMA_CPP_ENABLE_UNIFIED_KV=false"} {
			if !strings.Contains(got, want) {
				t.Errorf("no candidate %s in %s", want, got)
			}
		}
		if len(p.Candidates) != 64 || p.Candidates[63].Distance.Changed != 2 {
			t.Errorf("candidates=%d, last changes %d settings", len(p.Candidates), p.Candidates[63].Distance.Changed)
		}
	})
}

func TestConstraints(t *testing.T) {
	items := []workload.Item{{Prompt: strings.Repeat("x", 3000), MaxTokens: 100}} // 1000+16 prompt, 100 out
	need := EstimateNeed(items, 192)
	if need.LargestRequestTokens != 1116 || need.LargestPromptTokens != 1016 {
		t.Fatalf("need = %+v", need)
	}
	tests := []struct {
		name    string
		base    map[string]string
		machine Machine
		absent  []string // labels that must be rejected
		present []string // labels that must be kept
		baseBad string   // a baseline violation that must be reported
	}{
		{name: "threads within vCPUs", machine: Machine{VCPUs: 2},
			absent: []string{"LLAMA_CPP_THREADS=3", "LLAMA_CPP_THREADS_BATCH=4"}, present: []string{"LLAMA_CPP_THREADS=1"}},
		{name: "ubatch within batch", base: with(testBase(), LlamaUBatchSize, "192"), machine: Machine{VCPUs: 2},
			absent: []string{"LLAMA_CPP_UBATCH_SIZE=384", "LLAMA_CPP_BATCH_SIZE=96"}, present: []string{"LLAMA_CPP_UBATCH_SIZE=96", "LLAMA_CPP_BATCH_SIZE=384"}},
		{name: "per-slot context holds the largest request", base: with(testBase(), LlamaUnifiedKV, "false"), machine: Machine{VCPUs: 2},
			absent:  []string{"LLAMA_CPP_PARALLEL=2", "LLAMA_CPP_CTX_SIZE=1024"},
			present: []string{"LLAMA_CPP_CTX_SIZE=4096", "LLAMA_CPP_PARALLEL=2 LLAMA_CPP_CTX_SIZE=4096"}},
		{name: "unified KV gives every slot the whole context", machine: Machine{VCPUs: 2},
			absent:  []string{"LLAMA_CPP_CTX_SIZE=1024", "LLAMA_CPP_PARALLEL=2 LLAMA_CPP_ENABLE_UNIFIED_KV=false"},
			present: []string{"LLAMA_CPP_PARALLEL=2", "LLAMA_CPP_ENABLE_UNIFIED_KV=false"}},
		{name: "token budgets hold the largest request", base: with(testBase(), SchedInflightTok, "1200"), machine: Machine{VCPUs: 2},
			absent: []string{"SCHEDULER_MAX_INFLIGHT_TOKENS=600"}, present: []string{"SCHEDULER_MAX_INFLIGHT_TOKENS=2400"}},
		{name: "memory budget", machine: Machine{VCPUs: 2, MemoryBudgetMiB: 800,
			EstimateMiB: func(s Shape) (int, error) { return s.CtxSize/4 + s.Parallel*100, nil }}, // base: 512+100
			absent:  []string{"LLAMA_CPP_CTX_SIZE=4096", "LLAMA_CPP_PARALLEL=3", "LLAMA_CPP_PARALLEL=4"},
			present: []string{"LLAMA_CPP_PARALLEL=2", "LLAMA_CPP_BATCH_SIZE=384"}},
		{name: "a baseline violation is reported, not enforced on unchanged settings",
			base: with(testBase(), LlamaThreads, "4"), machine: Machine{VCPUs: 2},
			absent: []string{"LLAMA_CPP_THREADS=3"}, present: []string{"LLAMA_CPP_THREADS=2", "LLAMA_CPP_PARALLEL=2"},
			baseBad: "threads: RAY_LLAMA_CPP_THREADS=4 exceeds the machine's 2 vCPUs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := tt.base
			if base == nil {
				base = testBase()
			}
			s := Space{Mode: ModeFull, Base: base, Machine: tt.machine, Need: need, Max: 2000}
			p, err := s.Generate()
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, l := range labels(p) {
				have[l] = true
			}
			for _, l := range tt.absent {
				if have[l] {
					t.Errorf("candidate %q kept", l)
				}
			}
			for _, l := range tt.present {
				if !have[l] {
					t.Errorf("candidate %q missing", l)
				}
			}
			if p.Rejected == 0 {
				t.Error("nothing rejected")
			}
			got := strings.Join(p.BaselineViolations, "; ")
			if (tt.baseBad == "") != (got == "") || !strings.Contains(got, tt.baseBad) {
				t.Errorf("baseline violations %q, want %q", got, tt.baseBad)
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	t.Run("bad mode", func(t *testing.T) {
		_, err := (&Space{Mode: "fast", Base: testBase()}).Generate()
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("enumeration bound", func(t *testing.T) {
		_, err := (&Space{Mode: ModeFull, Base: testBase(), Machine: Machine{VCPUs: 2}, Max: 5000, MaxEnumerated: 100}).Generate()
		if !errors.Is(err, ErrEnumeration) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("max 1 keeps only the baseline", func(t *testing.T) {
		p, err := (&Space{Mode: ModeFull, Base: testBase(), Max: 1}).Generate()
		if err != nil || len(p.Candidates) != 1 || p.Candidates[0].Label() != "current" || len(p.Candidates[0].Overrides()) != 0 {
			t.Fatalf("plan %+v, %v", p, err)
		}
	})
}

func TestEstimatePromptTokens(t *testing.T) {
	tests := []struct {
		it   workload.Item
		want int
	}{
		{workload.Item{Prompt: "abcdef"}, 2 + tokensTemplate},
		{workload.Item{Prompt: "abcdefg"}, 3 + tokensTemplate},
		{workload.Item{Messages: []workload.Message{{Role: "system", Content: "abc"}, {Role: "user", Content: "abc"}}},
			2 + tokensTemplate + 2*tokensPerMessage},
	}
	for _, tt := range tests {
		if got := EstimatePromptTokens(&tt.it); got != tt.want {
			t.Errorf("EstimatePromptTokens(%+v) = %d, want %d", tt.it, got, tt.want)
		}
	}
	// max_tokens 0 takes the model cap; a larger one is capped by it.
	n := EstimateNeed([]workload.Item{{Prompt: "abc"}, {Prompt: "abc", MaxTokens: 999}}, 50)
	if n.LargestRequestTokens != 1+tokensTemplate+50 {
		t.Errorf("need = %+v", n)
	}
}
