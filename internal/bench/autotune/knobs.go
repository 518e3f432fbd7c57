package autotune

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Setting names the search reads or changes.
const (
	SchedConcurrency   = "RAY_SCHEDULER_CONCURRENCY"
	SchedBatchWindowMS = "RAY_SCHEDULER_BATCH_WINDOW_MS"
	SchedInflightTok   = "RAY_SCHEDULER_MAX_INFLIGHT_TOKENS"
	SchedQueuedTok     = "RAY_SCHEDULER_MAX_QUEUED_TOKENS"
	SchedShortJobTok   = "RAY_SCHEDULER_SHORT_JOB_MAX_TOKENS"
	SchedSlotAffinity  = "RAY_SCHEDULER_SLOT_AFFINITY_ENABLED"
	LlamaParallel      = "RAY_LLAMA_CPP_PARALLEL"
	LlamaCtxSize       = "RAY_LLAMA_CPP_CTX_SIZE"
	LlamaBatchSize     = "RAY_LLAMA_CPP_BATCH_SIZE"
	LlamaUBatchSize    = "RAY_LLAMA_CPP_UBATCH_SIZE"
	LlamaThreads       = "RAY_LLAMA_CPP_THREADS"
	LlamaThreadsBatch  = "RAY_LLAMA_CPP_THREADS_BATCH"
	LlamaCacheReuse    = "RAY_LLAMA_CPP_CACHE_REUSE"
	LlamaUnifiedKV     = "RAY_LLAMA_CPP_ENABLE_UNIFIED_KV"
)

// Knob is one searched RAY_* setting.
type Knob struct {
	Name string
	// Bool knobs hold 0 (false) or 1 (true).
	Bool bool
	// Launch marks a launch-profile setting, searched in full mode only.
	Launch bool
	// alts returns the values tried besides the current one.
	alts func(cur int, p Point, m Machine) []int
}

// Format renders a knob value as its env-file text.
func (k Knob) Format(v int) string {
	if k.Bool {
		return strconv.FormatBool(v != 0)
	}
	return strconv.Itoa(v)
}

// knobs is the search space, in the order ties are broken and changes listed.
var knobs = []Knob{
	{Name: SchedConcurrency, alts: func(cur int, p Point, _ Machine) []int {
		return upTo(max(4, 2*p[LlamaParallel]), 1, 2, 3, 4, 6, 8, cur-1, cur+1)
	}},
	{Name: SchedBatchWindowMS, alts: func(int, Point, Machine) []int { return []int{0, 2, 5, 10, 20} }},
	{Name: SchedInflightTok, alts: halveDouble},
	{Name: SchedQueuedTok, alts: halveDouble},
	{Name: SchedShortJobTok, alts: func(cur int, _ Point, _ Machine) []int {
		if cur == 0 {
			return []int{32, 64, 128}
		}
		return []int{0, cur / 2, cur * 2}
	}},
	{Name: SchedSlotAffinity, Bool: true, alts: flip},
	{Name: LlamaParallel, Launch: true, alts: func(cur int, _ Point, _ Machine) []int {
		return upTo(max(4, 2*cur), 1, 2, 3, 4, cur/2, cur*2)
	}},
	{Name: LlamaCtxSize, Launch: true, alts: halveDouble},
	{Name: LlamaBatchSize, Launch: true, alts: halveDouble},
	{Name: LlamaUBatchSize, Launch: true, alts: halveDouble},
	{Name: LlamaThreads, Launch: true, alts: threads},
	{Name: LlamaThreadsBatch, Launch: true, alts: threads},
	{Name: LlamaCacheReuse, Launch: true, alts: func(cur int, _ Point, _ Machine) []int {
		if cur == 0 {
			return []int{64, 256}
		}
		return []int{0, cur / 2, cur * 2}
	}},
	{Name: LlamaUnifiedKV, Launch: true, Bool: true, alts: flip},
}

// Knobs lists the settings a mode searches, in search order.
func Knobs(m Mode) []Knob {
	var out []Knob
	for _, k := range knobs {
		if !k.Launch || m == ModeFull {
			out = append(out, k)
		}
	}
	return out
}

func knobByName(name string) (Knob, bool) {
	for _, k := range knobs {
		if k.Name == name {
			return k, true
		}
	}
	return Knob{}, false
}

func halveDouble(cur int, _ Point, _ Machine) []int { return []int{cur / 2, cur * 2} }

func flip(cur int, _ Point, _ Machine) []int { return []int{1 - cur} }

// threads tries powers of two, half and all of the vCPUs, and one either side
// of the current value; the threads constraint drops what exceeds the vCPUs.
func threads(cur int, _ Point, m Machine) []int {
	return upTo(max(m.VCPUs, 1), 1, 2, 4, 8, 16, 32, 64, m.VCPUs/2, m.VCPUs, cur-1, cur+1)
}

// upTo keeps the values in [1, hi].
func upTo(hi int, vals ...int) []int {
	var out []int
	for _, v := range vals {
		if v >= 1 && v <= hi {
			out = append(out, v)
		}
	}
	return out
}

// Point is one value of every knob (bools as 0/1), plus the fixed settings
// the constraints read.
type Point map[string]int

// BasePoint reads every knob's current value from resolved RAY_* values (as
// config.Loaded.Resolved lists them).
func BasePoint(base map[string]string) (Point, error) {
	p := Point{}
	for _, k := range knobs {
		raw, ok := base[k.Name]
		if !ok {
			return nil, fmt.Errorf("%w: %s missing from the base configuration", ErrInvalid, k.Name)
		}
		raw = strings.TrimSpace(raw)
		if k.Bool {
			b, err := strconv.ParseBool(raw)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: expected true or false, got %q", ErrInvalid, k.Name, raw)
			}
			p[k.Name] = boolInt(b)
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: expected a whole number, got %q", ErrInvalid, k.Name, raw)
		}
		p[k.Name] = n
	}
	return p, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// alternatives returns k's candidate values other than cur: distinct,
// non-negative, closest first (then smaller first).
func alternatives(k Knob, cur int, p Point, m Machine) []int {
	var out []int
	for _, v := range k.alts(cur, p, m) {
		if v < 0 || v == cur || slices.Contains(out, v) {
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b int) int {
		if c := cmpFloat(relChange(k, cur, a), relChange(k, cur, b)); c != 0 {
			return c
		}
		return a - b
	})
	return out
}

// relChange is how far v is from cur: |v-cur|/max(|cur|,1), or 1 for a
// flipped boolean.
func relChange(k Knob, cur, v int) float64 {
	if k.Bool {
		return 1
	}
	d := float64(v - cur)
	if d < 0 {
		d = -d
	}
	return d / float64(max(abs(cur), 1))
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
