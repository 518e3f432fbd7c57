package deploy

import (
	"fmt"
	"time"

	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/engine/vllm"
	"github.com/raygw/raygw/internal/runtime"
)

// Defaults are the launch settings a spec does not set: the RAY_LLAMA_CPP_*
// launch profile (its host and port are replaced per replica) and the
// machine's CPU count for pinning.
type Defaults struct {
	Llama      llamacpp.Launch
	VLLMBinary string
	CPUs       int
}

// ms converts a millisecond setting with a default.
func ms(v, def int) time.Duration {
	if v <= 0 {
		v = def
	}
	return time.Duration(v) * time.Millisecond
}

// replicaSpec renders what the runtime needs to start replica id in slot.
func replicaSpec(s Spec, d Defaults, id string, slot int) (runtime.ReplicaSpec, error) {
	h := s.Health
	rs := runtime.ReplicaSpec{
		ID: id, Deployment: s.Name, HealthPath: "/health",
		StartTimeout: ms(h.StartTimeoutMS, 120_000), ProbeInterval: ms(h.IntervalMS, 10_000),
		ProbeTimeout: ms(h.TimeoutMS, 2_000), FailureLimit: h.FailureLimit,
		BackoffBase: ms(h.BackoffBaseMS, 1_000), BackoffMax: ms(h.BackoffMaxMS, 300_000),
		CPUs: cpuSet(slot, s.CPUsPerReplica, d.CPUs), GPUs: gpuSet(slot, s.GPUsPerReplica),
	}
	switch s.ModelClass {
	case ClassLlamaCpp:
		l := llamaLaunch(s, d)
		rs.Command = func(host string, port int) ([]string, []string) {
			l.Host, l.Port = host, port
			return l.Argv(), nil
		}
	case ClassVLLM:
		cfg, err := s.Effective()
		if err != nil {
			return rs, err
		}
		bin := s.EngineConfig.Binary
		if bin == "" {
			bin = d.VLLMBinary
		}
		rs.Command = func(host string, port int) ([]string, []string) {
			return vllm.Serve{Binary: bin, ModelPath: s.ModelPath, ServedModelName: s.ModelName,
				Host: host, Port: port, Config: cfg}.Argv(), nil
		}
	case ClassOpenAI:
		rs.ExternalURL = s.EngineConfig.BaseURL
		rs.HealthPath = "/models"
	default:
		return rs, fmt.Errorf("model_class %q: %w", s.ModelClass, errBadSpec)
	}
	if h.Path != "" {
		rs.HealthPath = h.Path
	}
	return rs, nil
}

// llamaLaunch is the launch profile with the spec's overrides applied.
func llamaLaunch(s Spec, d Defaults) llamacpp.Launch {
	l := d.Llama
	e := s.EngineConfig
	l.ModelPath, l.Alias = s.ModelPath, s.ModelName
	set := func(dst *int, v int) {
		if v > 0 {
			*dst = v
		}
	}
	if e.Binary != "" {
		l.Binary = e.Binary
	}
	set(&l.Threads, s.CPUsPerReplica)
	set(&l.ThreadsBatch, s.CPUsPerReplica)
	set(&l.CtxSize, e.CtxSize)
	set(&l.Parallel, e.Parallel)
	set(&l.Threads, e.Threads)
	set(&l.ThreadsBatch, e.ThreadsBatch)
	set(&l.ThreadsHTTP, e.ThreadsHTTP)
	set(&l.BatchSize, e.BatchSize)
	set(&l.UBatchSize, e.UBatchSize)
	l.LoRA = nil
	for _, m := range e.LoRAModules {
		l.LoRA = append(l.LoRA, m.Path)
	}
	if len(l.LoRA) > 0 {
		// llama-server's RAM prompt cache does not key entries by adapter: a
		// prompt cached without one would be continued with another.
		l.CacheRAMMiB = 0
	}
	l.Extra = append(append([]string(nil), d.Llama.Extra...), e.ExtraArgs...)
	return l
}

// contextWindow is the largest prompt + max_tokens a request may ask for
// (0: unknown, the engine decides).
func contextWindow(s Spec, d Defaults) int {
	if v := s.EngineConfig.MaxModelLen; v != nil {
		return *v
	}
	if s.ModelClass != ClassLlamaCpp {
		if c, err := s.Effective(); err == nil && c.MaxModelLen != nil {
			return *c.MaxModelLen
		}
		return 0
	}
	l := llamaLaunch(s, d)
	if l.KVUnified || l.Parallel <= 1 {
		return l.CtxSize
	}
	return l.CtxSize / l.Parallel
}

// slotsOf is how many requests one replica runs at once.
func slotsOf(s Spec, d Defaults) int {
	if s.ModelClass == ClassLlamaCpp {
		return max(1, llamaLaunch(s, d).Parallel)
	}
	return 0
}

// cpuSet gives slot its n CPUs, wrapping around the machine's CPUs.
func cpuSet(slot, n, total int) []int {
	if n <= 0 {
		return nil
	}
	if total <= 0 {
		total = 1
	}
	out := make([]int, 0, n)
	for k := 0; k < n; k++ {
		out = append(out, (slot*n+k)%total)
	}
	return uniq(out)
}

// gpuSet gives slot its n GPUs (device numbers slot*n .. slot*n+n-1).
func gpuSet(slot, n int) []int {
	out := make([]int, 0, n)
	for k := 0; k < n; k++ {
		out = append(out, slot*n+k)
	}
	return out
}

func uniq(v []int) []int {
	seen := map[int]bool{}
	out := v[:0]
	for _, x := range v {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
