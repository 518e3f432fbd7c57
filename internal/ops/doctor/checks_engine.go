package doctor

import (
	"fmt"
	"strings"

	"github.com/raygw/raygw/internal/ops/engineprobe"
	"github.com/raygw/raygw/internal/ops/gguf"
)

// checkGatewayBinary runs `raygw version` (as the service user when possible)
// and checks the build's os/arch against the host.
func checkGatewayBinary(e *Env) Result {
	bin := e.gatewayBinary()
	fix := "install the raygw binary at " + bin + " (or set RAY_GATEWAY_RUNTIME_BINARY / --gateway-runtime-binary)"
	fi, err := e.Host.Stat(bin)
	if err != nil {
		return fail(fix, "raygw binary %s: %v", bin, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fail("sudo chmod 0755 "+bin, "raygw binary %s is not executable (mode %s)", bin, fi.Mode().Perm())
	}
	prefix, note := e.asUser()
	out, err := e.Run(e.Ctx, e.Timeout, append(prefix, e.Host.Path(bin), "version"))
	if err != nil {
		return fail(fix, "%s version failed: %v", bin, err)
	}
	line := firstLine(string(out))
	if !strings.HasPrefix(line, "raygw ") {
		return fail(fix, "%s is not raygw: version printed %q", bin, line)
	}
	for _, f := range strings.Fields(line) {
		if goos, arch, ok := strings.Cut(f, "/"); ok && goos == "linux" && arch != e.Arch {
			return fail("install the linux/"+e.Arch+" build of raygw", "%s is built for %s but this host is %s", bin, f, e.Arch)
		}
	}
	if note != "" {
		line += "; " + note
	}
	return ok("%s: %s", bin, line)
}

func checkLlamaServer(e *Env) Result {
	bin := e.Config.LlamaCpp.BinaryPath
	if _, err := e.Host.Stat(bin); err != nil {
		return fail("stage it: raygw stage --binary-source ./llama-server --apply", "llama-server %s: %v", bin, err)
	}
	help, err := e.llamaHelp()
	if err != nil {
		return fail("check the binary's libraries (ldd) and that the service user can run it", "llama-server --help: %v", err)
	}
	_, note := e.asUser()
	msg := fmt.Sprintf("%s --help answered within %s (%d lines)", bin, e.Timeout, strings.Count(help, "\n"))
	if note != "" {
		msg += "; " + note
	}
	return ok("%s", msg)
}

func checkLlamaFlags(e *Env) Result {
	help, err := e.llamaHelp()
	if err != nil {
		return fail("make llama-server start first (see llama-server check)", "launch flags not checked: %v", err)
	}
	flags := e.launch().Flags()
	if missing := engineprobe.Missing(help, flags); len(missing) > 0 {
		return fail("install a newer llama-server, or change the RAY_LLAMA_CPP_* toggles",
			"llama-server does not support %s", strings.Join(missing, " "))
	}
	return ok("llama-server supports all %d generated launch flags", len(flags))
}

func checkModel(e *Env) Result {
	p := e.modelPath()
	if !e.Host.Exists(p) {
		return fail("stage it: raygw stage --source ./model.gguf --apply (or raygw model pull)", "GGUF %s is missing", p)
	}
	m, err := e.model()
	if err != nil {
		return fail("re-stage a complete GGUF file", "%v", err)
	}
	msg := fmt.Sprintf("%s: %s", p, m.Info)
	l := e.launch()
	perSlot := l.CtxSize / max(l.Parallel, 1)
	if m.Info.ContextLength > 0 && uint64(perSlot) > m.Info.ContextLength {
		return warn("lower RAY_LLAMA_CPP_CTX_SIZE", "%s; per-slot context %d exceeds the trained context", msg, perSlot)
	}
	if q := e.Config.Model.Quantization; q != "" && !strings.EqualFold(q, m.Info.Quantization) {
		return warn("set RAY_MODEL_QUANTIZATION="+strings.ToLower(m.Info.Quantization),
			"%s; RAY_MODEL_QUANTIZATION=%s does not match the file", msg, q)
	}
	return ok("%s", msg)
}

// checkMemoryFit projects llama-server's memory (weights + KV cache for the
// context and slots + compute buffers + prompt cache RAM) against its
// generated MemoryMax, and adds the gateway's MemoryMax for detected RAM.
func checkMemoryFit(e *Env) Result {
	m, err := e.model()
	if err != nil {
		return fail("stage the GGUF so its memory can be estimated", "no model to estimate: %v", err)
	}
	p, err := e.plan()
	if err != nil {
		return fail("see memory-target", "%v", err)
	}
	l := e.launch()
	est, err := m.Estimate(gguf.Profile{CtxSize: l.CtxSize, Parallel: l.Parallel, BatchSize: l.BatchSize, UBatchSize: l.UBatchSize})
	if err != nil {
		return warn("", "%v", err)
	}
	llama := mib(est.TotalBytes()) + uint64(l.CacheRAMMiB)
	msg := fmt.Sprintf("llama-server needs ~%d MiB (weights %d + KV %d + compute %d + prompt cache %d) of MemoryMax %d MiB",
		llama, mib(est.WeightsBytes), mib(est.KVCacheBytes), mib(est.ComputeBytes), l.CacheRAMMiB, p.Llama.MaxMiB)
	fix := "use a smaller quantization, or lower RAY_LLAMA_CPP_CTX_SIZE / RAY_LLAMA_CPP_PARALLEL / RAY_LLAMA_CPP_CACHE_RAM_MIB"
	if llama > uint64(p.Llama.MaxMiB) {
		return fail(fix, "%s: it would be killed by its cgroup", msg)
	}
	if mi, err := e.Host.Meminfo(); err == nil {
		ram := mi.MemTotalKiB >> 10
		total := llama + uint64(p.Gateway.MaxMiB)
		msg += fmt.Sprintf("; with the gateway's %d MiB: %d of %d MiB RAM", p.Gateway.MaxMiB, total, ram)
		if total > ram {
			return fail(fix, "%s", msg)
		}
	}
	if llama*10 > uint64(p.Llama.MaxMiB)*9 {
		return warn(fix, "%s: under 10%% headroom", msg)
	}
	return ok("%s", msg)
}

// checkGatewayBudget adds up the gateway's own memory budgets — response
// cache, rate-limit keys, queued request bodies and token buffers — against
// its degradation RSS threshold and generated MemoryMax.
func checkGatewayBudget(e *Env) Result {
	c := e.Config
	p, err := e.plan()
	if err != nil {
		return fail("see memory-target", "%v", err)
	}
	const base = 64 << 20
	bodies := int64(c.Scheduler.MaxQueue+c.Scheduler.Concurrency) * c.Request.BodyLimitBytes * 2
	keys := int64(c.RateLimit.MaxKeys) * 512
	tokens := int64(c.Scheduler.MaxQueuedTokens+c.Scheduler.MaxInflightTokens) * 16
	total := base + c.Cache.MaxBytes + keys + bodies + tokens
	msg := fmt.Sprintf("gateway budgets ~%d MiB (runtime 64 + response cache %d + rate-limit keys %d + queued bodies %d + token buffers %d) vs RSS threshold %d MiB, MemoryMax %d MiB",
		mib(uint64(total)), mib(uint64(c.Cache.MaxBytes)), mib(uint64(keys)), mib(uint64(bodies)), mib(uint64(tokens)),
		c.Degradation.MemoryRSSThresholdMiB, p.Gateway.MaxMiB)
	fix := "lower RAY_CACHE_MAX_BYTES, RAY_SCHEDULER_MAX_QUEUE, RAY_REQUEST_BODY_LIMIT_BYTES or RAY_RATE_LIMIT_MAX_KEYS"
	switch {
	case mib(uint64(total)) > uint64(p.Gateway.MaxMiB):
		return fail(fix, "%s", msg)
	case mib(uint64(total)) > uint64(c.Degradation.MemoryRSSThresholdMiB):
		return warn(fix, "%s: full budgets would trigger degradation", msg)
	}
	return ok("%s", msg)
}

func checkAsyncStorage(e *Env) Result {
	q := e.Config.AsyncQueue
	if !q.Enabled {
		return ok("async queue disabled")
	}
	min := max(q.MinFreeStorageMiB, e.Config.Deploy.MinFreeStorageMiB)
	return e.headroom("async queue", q.StorageDir, min)
}
