package autotune

import (
	"fmt"
	"slices"

	"github.com/raygw/raygw/internal/bench/workload"
)

// Machine is what the search knows about the host.
type Machine struct {
	// VCPUs bounds llama-server's thread counts.
	VCPUs int
	// MemoryBudgetMiB bounds llama-server's estimated memory (0: no bound).
	MemoryBudgetMiB int
	// EstimateMiB projects llama-server's memory for a launch shape; nil
	// disables the memory constraint.
	EstimateMiB func(Shape) (int, error)
}

// Shape is the part of a launch profile that drives llama-server's memory.
type Shape struct {
	CtxSize, Parallel, BatchSize, UBatchSize int
}

// Need is what the workload asks of a configuration.
type Need struct {
	// LargestRequestTokens is the largest prompt estimate plus output cap
	// of one request: a slot's context and each token budget must hold it.
	LargestRequestTokens int `json:"largest_request_tokens"`
	// LargestPromptTokens is the largest prompt estimate alone.
	LargestPromptTokens int `json:"largest_prompt_tokens"`
}

// Prompt-size estimate without a tokenizer: one token per three bytes (a
// conservative ratio; English BPE averages about four), plus the chat
// template's cost per message and per request.
const (
	bytesPerToken    = 3
	tokensPerMessage = 8
	tokensTemplate   = 16
)

// EstimatePromptTokens is a tokenizer-free upper estimate of an item's prompt.
func EstimatePromptTokens(it *workload.Item) int {
	n := len(it.Prompt)
	for _, m := range it.Messages {
		n += len(m.Content)
	}
	t := (n+bytesPerToken-1)/bytesPerToken + tokensTemplate
	if it.Chat() {
		t += tokensPerMessage * len(it.Messages)
	}
	return t
}

// EstimateNeed sizes the workload. An item without max_tokens gets
// maxOutput (RAY_MODEL_MAX_OUTPUT_TOKENS), which also caps every item, as the
// gateway does.
func EstimateNeed(items []workload.Item, maxOutput int) Need {
	var n Need
	for i := range items {
		out := items[i].MaxTokens
		if out <= 0 || (maxOutput > 0 && out > maxOutput) {
			out = maxOutput
		}
		p := EstimatePromptTokens(&items[i])
		n.LargestPromptTokens = max(n.LargestPromptTokens, p)
		n.LargestRequestTokens = max(n.LargestRequestTokens, p+max(out, 0))
	}
	return n
}

// constraint is one rule a candidate must keep. A candidate is rejected when
// it breaks a rule that involves a setting it changed; rules the current
// configuration already breaks are reported, not enforced on unchanged
// settings.
type constraint struct {
	name     string
	involves []string
	// check returns "" when p keeps the rule, else why not.
	check func(p Point, s *Space) string
}

var constraints = []constraint{
	{"threads", []string{LlamaThreads}, func(p Point, s *Space) string {
		return atMostVCPUs(LlamaThreads, p[LlamaThreads], s.Machine.VCPUs)
	}},
	{"threads-batch", []string{LlamaThreadsBatch}, func(p Point, s *Space) string {
		return atMostVCPUs(LlamaThreadsBatch, p[LlamaThreadsBatch], s.Machine.VCPUs)
	}},
	{"ubatch", []string{LlamaUBatchSize, LlamaBatchSize}, func(p Point, _ *Space) string {
		if p[LlamaUBatchSize] > p[LlamaBatchSize] {
			return fmt.Sprintf("%s=%d exceeds %s=%d", LlamaUBatchSize, p[LlamaUBatchSize], LlamaBatchSize, p[LlamaBatchSize])
		}
		return ""
	}},
	{"slot-context", []string{LlamaCtxSize, LlamaParallel, LlamaUnifiedKV}, func(p Point, s *Space) string {
		if per := SlotContext(p); per < s.Need.LargestRequestTokens {
			return fmt.Sprintf("per-slot context %d < largest request estimate %d tokens", per, s.Need.LargestRequestTokens)
		}
		return ""
	}},
	{"inflight-budget", []string{SchedInflightTok}, func(p Point, s *Space) string {
		return holdsRequest(SchedInflightTok, p[SchedInflightTok], s.Need)
	}},
	{"queued-budget", []string{SchedQueuedTok}, func(p Point, s *Space) string {
		return holdsRequest(SchedQueuedTok, p[SchedQueuedTok], s.Need)
	}},
	{"memory", []string{LlamaCtxSize, LlamaParallel, LlamaBatchSize, LlamaUBatchSize}, checkMemory},
}

// SlotContext is the context one request may use: the whole --ctx-size with
// a unified KV cache, else ctx-size / parallel.
func SlotContext(p Point) int {
	if p[LlamaUnifiedKV] != 0 {
		return p[LlamaCtxSize]
	}
	return p[LlamaCtxSize] / max(p[LlamaParallel], 1)
}

func atMostVCPUs(name string, v, vcpus int) string {
	if vcpus > 0 && v > vcpus {
		return fmt.Sprintf("%s=%d exceeds the machine's %d vCPUs", name, v, vcpus)
	}
	return ""
}

func holdsRequest(name string, v int, n Need) string {
	if v < n.LargestRequestTokens {
		return fmt.Sprintf("%s=%d < largest request estimate %d tokens", name, v, n.LargestRequestTokens)
	}
	return ""
}

func checkMemory(p Point, s *Space) string {
	m := s.Machine
	if m.MemoryBudgetMiB <= 0 || m.EstimateMiB == nil {
		return ""
	}
	sh := Shape{CtxSize: p[LlamaCtxSize], Parallel: p[LlamaParallel], BatchSize: p[LlamaBatchSize], UBatchSize: p[LlamaUBatchSize]}
	mib, err := s.estimate(sh)
	if err != nil {
		return fmt.Sprintf("memory estimate failed: %v", err)
	}
	if mib > m.MemoryBudgetMiB {
		return fmt.Sprintf("estimated %d MiB exceeds the %d MiB memory budget", mib, m.MemoryBudgetMiB)
	}
	return ""
}

// violations lists the rules p breaks; with changed non-nil, only rules that
// involve a changed setting.
func (s *Space) violations(p Point, changed []string) []string {
	var out []string
	for _, c := range constraints {
		if changed != nil && !slices.ContainsFunc(c.involves, func(n string) bool { return slices.Contains(changed, n) }) {
			continue
		}
		if msg := c.check(p, s); msg != "" {
			out = append(out, c.name+": "+msg)
		}
	}
	return out
}
