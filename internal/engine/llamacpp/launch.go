// Package llamacpp owns what raygw knows about llama.cpp's llama-server: the
// launch profile rendered to an exact argv, and the engine's native endpoints
// (/health, /tokenize, /slots) beyond its OpenAI-compatible API.
package llamacpp

import (
	"strconv"

	"github.com/raygw/raygw/internal/config"
)

// Launch is everything needed to start one llama-server process.
type Launch struct {
	Binary       string
	ModelPath    string
	Alias        string
	Host         string
	Port         int
	CtxSize      int
	Parallel     int
	Threads      int
	ThreadsBatch int
	ThreadsHTTP  int
	BatchSize    int
	UBatchSize   int
	CacheReuse   int
	CacheRAMMiB  int
	ContBatching bool
	Metrics      bool
	Slots        bool
	Warmup       bool
	KVUnified    bool
	CacheIdle    bool
	ContextShift bool
	// LoRA lists adapter files loaded at start (applied per request by id).
	LoRA []string
	// Extra is appended verbatim after the rendered flags.
	Extra []string
}

// FromConfig builds the launch profile of the RAY_LLAMA_CPP_* settings. The
// model path falls back to RAY_MODEL_PATH and the alias to RAY_MODEL_REF.
func FromConfig(c *config.Config) Launch {
	l := c.LlamaCpp
	model := l.ModelPath
	if model == "" {
		model = c.Model.Path
	}
	alias := l.Alias
	if alias == "" {
		alias = c.Model.Ref
	}
	return Launch{
		Binary: l.BinaryPath, ModelPath: model, Alias: alias, Host: l.Host, Port: l.Port,
		CtxSize: l.CtxSize, Parallel: l.Parallel, Threads: l.Threads, ThreadsBatch: l.ThreadsBatch,
		ThreadsHTTP: l.ThreadsHTTP, BatchSize: l.BatchSize, UBatchSize: l.UBatchSize,
		CacheReuse: l.CacheReuse, CacheRAMMiB: l.CacheRAMMiB, ContBatching: l.ContinuousBatching,
		Metrics: l.EnableMetrics, Slots: l.ExposeSlots, Warmup: l.Warmup, KVUnified: l.EnableUnifiedKV,
		CacheIdle: l.CacheIdleSlots, ContextShift: l.ContextShift,
	}
}

// Argv renders the exact command line, binary first.
func (l Launch) Argv() []string {
	itoa := strconv.Itoa
	argv := []string{l.Binary,
		"--model", l.ModelPath,
		"--alias", l.Alias,
		"--host", l.Host,
		"--port", itoa(l.Port),
		"--ctx-size", itoa(l.CtxSize),
		"--parallel", itoa(l.Parallel),
		"--threads", itoa(l.Threads),
		"--threads-batch", itoa(l.ThreadsBatch),
		"--threads-http", itoa(l.ThreadsHTTP),
		"--batch-size", itoa(l.BatchSize),
		"--ubatch-size", itoa(l.UBatchSize),
		"--cache-reuse", itoa(l.CacheReuse),
		"--cache-ram", itoa(l.CacheRAMMiB),
		toggle(l.ContBatching, "--cont-batching", "--no-cont-batching"),
	}
	if l.Metrics {
		argv = append(argv, "--metrics")
	}
	argv = append(argv,
		toggle(l.Slots, "--slots", "--no-slots"),
		toggle(l.Warmup, "--warmup", "--no-warmup"),
		toggle(l.KVUnified, "--kv-unified", "--no-kv-unified"),
		toggle(l.CacheIdle, "--cache-idle-slots", "--no-cache-idle-slots"),
		toggle(l.ContextShift, "--context-shift", "--no-context-shift"),
		"--no-webui",
	)
	for _, a := range l.LoRA {
		argv = append(argv, "--lora", a)
	}
	if len(l.LoRA) > 0 {
		argv = append(argv, "--lora-init-without-apply")
	}
	return append(argv, l.Extra...)
}

// Flags lists the distinct flags Argv uses, for checking that a llama-server
// binary supports each one (its --help output must mention them).
func (l Launch) Flags() []string {
	var out []string
	for _, a := range l.Argv()[1:] {
		if len(a) > 2 && a[0] == '-' && a[1] == '-' {
			out = append(out, a)
		}
	}
	return out
}

// BaseURL is the http URL the launched server answers on.
func (l Launch) BaseURL() string {
	host := l.Host
	for i := 0; i < len(host); i++ {
		if host[i] == ':' {
			host = "[" + host + "]"
			break
		}
	}
	return "http://" + host + ":" + strconv.Itoa(l.Port)
}

func toggle(on bool, yes, no string) string {
	if on {
		return yes
	}
	return no
}
