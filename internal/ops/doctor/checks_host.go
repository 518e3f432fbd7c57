package doctor

import (
	"debug/elf"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// checkLaunchProfile checks the launch profile against the host's vCPUs and
// the settings that must agree with each other.
func checkLaunchProfile(e *Env) Result {
	c := e.Config
	l := e.launch()
	var fails, warns []string
	vcpus, err := e.Host.CPUs()
	if err != nil {
		warns = append(warns, fmt.Sprintf("vCPUs unknown (%v)", err))
	} else {
		if l.Threads > vcpus {
			fails = append(fails, fmt.Sprintf("RAY_LLAMA_CPP_THREADS=%d exceeds %d vCPUs", l.Threads, vcpus))
		}
		if l.ThreadsBatch > vcpus {
			fails = append(fails, fmt.Sprintf("RAY_LLAMA_CPP_THREADS_BATCH=%d exceeds %d vCPUs", l.ThreadsBatch, vcpus))
		}
		if c.Scheduler.Concurrency > vcpus {
			warns = append(warns, fmt.Sprintf("RAY_SCHEDULER_CONCURRENCY=%d exceeds %d vCPUs", c.Scheduler.Concurrency, vcpus))
		}
	}
	if c.Scheduler.Concurrency != l.Parallel {
		warns = append(warns, fmt.Sprintf("RAY_SCHEDULER_CONCURRENCY=%d differs from RAY_LLAMA_CPP_PARALLEL=%d slots", c.Scheduler.Concurrency, l.Parallel))
	}
	perSlot := l.CtxSize / max(l.Parallel, 1)
	if c.Model.MaxOutputTokens >= perSlot {
		fails = append(fails, fmt.Sprintf("RAY_MODEL_MAX_OUTPUT_TOKENS=%d leaves no prompt room in a %d-token slot", c.Model.MaxOutputTokens, perSlot))
	}
	if c.Scheduler.MaxInflightTokens > l.CtxSize {
		warns = append(warns, fmt.Sprintf("RAY_SCHEDULER_MAX_INFLIGHT_TOKENS=%d exceeds RAY_LLAMA_CPP_CTX_SIZE=%d", c.Scheduler.MaxInflightTokens, l.CtxSize))
	}
	if c.Scheduler.MaxQueuedTokens < c.Model.MaxOutputTokens {
		warns = append(warns, fmt.Sprintf("RAY_SCHEDULER_MAX_QUEUED_TOKENS=%d is below one request's RAY_MODEL_MAX_OUTPUT_TOKENS=%d", c.Scheduler.MaxQueuedTokens, c.Model.MaxOutputTokens))
	}
	if c.Request.BodyLimitBytes > int64(l.CtxSize)*32 {
		warns = append(warns, fmt.Sprintf("RAY_REQUEST_BODY_LIMIT_BYTES=%d admits far more text than RAY_LLAMA_CPP_CTX_SIZE=%d tokens", c.Request.BodyLimitBytes, l.CtxSize))
	}
	if c.Model.PreferredCtxSize > l.CtxSize {
		warns = append(warns, fmt.Sprintf("RAY_MODEL_PREFERRED_CTX_SIZE=%d exceeds RAY_LLAMA_CPP_CTX_SIZE=%d", c.Model.PreferredCtxSize, l.CtxSize))
	}
	if c.Degradation.MaxTokens > c.Model.MaxOutputTokens {
		warns = append(warns, fmt.Sprintf("RAY_DEGRADATION_MAX_TOKENS=%d exceeds RAY_MODEL_MAX_OUTPUT_TOKENS=%d", c.Degradation.MaxTokens, c.Model.MaxOutputTokens))
	}
	if p, err := e.plan(); err == nil {
		if l.CacheRAMMiB*2 > p.Llama.MaxMiB {
			warns = append(warns, fmt.Sprintf("RAY_LLAMA_CPP_CACHE_RAM_MIB=%d is over half of llama-server's MemoryMax %d MiB", l.CacheRAMMiB, p.Llama.MaxMiB))
		}
		if c.Cache.MaxBytes>>20 > int64(p.Gateway.MaxMiB/4) {
			warns = append(warns, fmt.Sprintf("RAY_CACHE_MAX_BYTES=%d is over a quarter of the gateway's MemoryMax %d MiB", c.Cache.MaxBytes, p.Gateway.MaxMiB))
		}
	}
	fix := "retune the named settings (see docs/ops.md, launch profile)"
	switch {
	case len(fails) > 0:
		return fail(fix, "%s", strings.Join(append(fails, warns...), "; "))
	case len(warns) > 0:
		return warn(fix, "%s", strings.Join(warns, "; "))
	}
	return ok("threads %d/%d of %d vCPUs, %d slot(s) of %d tokens, concurrency %d, output cap %d",
		l.Threads, l.ThreadsBatch, vcpus, l.Parallel, perSlot, c.Scheduler.Concurrency, c.Model.MaxOutputTokens)
}

var elfArch = map[elf.Machine]string{
	elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64", elf.EM_386: "386", elf.EM_ARM: "arm",
	elf.EM_RISCV: "riscv64", elf.EM_PPC64: "ppc64le", elf.EM_S390: "s390x",
}

// binaryArch reports a local file's ELF architecture, "script" for #!, or an error.
func binaryArch(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var magic [2]byte
	if _, err := f.ReadAt(magic[:], 0); err == nil && string(magic[:]) == "#!" {
		return "script", nil
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return "", fmt.Errorf("not an ELF executable: %w", err)
	}
	if a, ok := elfArch[ef.Machine]; ok {
		return a, nil
	}
	return ef.Machine.String(), nil
}

// checkArch compares the host architecture (arm64 CAX-class or amd64
// CX-class VPS) with the ELF architecture of both binaries.
func checkArch(e *Env) Result {
	var parts, bad []string
	for _, b := range []struct{ label, p string }{{"raygw", e.gatewayBinary()}, {"llama-server", e.Config.LlamaCpp.BinaryPath}} {
		a, err := binaryArch(e.Host.Path(b.p))
		switch {
		case os.IsNotExist(err):
			parts = append(parts, b.label+" missing")
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s %s: %v", b.label, b.p, err))
		case a == "script":
			parts = append(parts, b.label+" is a script wrapper")
		case a != e.Arch:
			bad = append(bad, fmt.Sprintf("%s %s is %s", b.label, b.p, a))
		default:
			parts = append(parts, b.label+" "+a)
		}
	}
	if len(bad) > 0 {
		return fail("install "+e.Arch+" builds of the binaries", "host is %s but %s", e.Arch, strings.Join(bad, "; "))
	}
	return ok("host %s; %s", e.Arch, strings.Join(parts, ", "))
}

// checkHiddenPaths finds generated paths that ProtectHome=true or
// PrivateTmp=true would hide from the services.
func checkHiddenPaths(e *Env) Result {
	c := e.Config
	paths := map[string]string{
		"RAY_GATEWAY_RUNTIME_BINARY": e.gatewayBinary(), "RAY_LLAMA_CPP_BINARY_PATH": c.LlamaCpp.BinaryPath,
		"RAY_LLAMA_CPP_MODEL_PATH": e.modelPath(), "RAY_STATE_DIR": c.StateDir,
	}
	if c.AsyncQueue.Enabled {
		paths["RAY_ASYNC_QUEUE_STORAGE_DIR"] = c.AsyncQueue.StorageDir
	}
	if e.ConfigFile != "" {
		paths["--config"] = e.ConfigFile
	}
	if e.EnvFile != "" {
		paths["--ray-env-file"] = e.EnvFile
	}
	var hidden []string
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		p := paths[name]
		if pre := under(p, "/home", "/root", "/run/user"); pre != "" {
			hidden = append(hidden, fmt.Sprintf("%s=%s (ProtectHome=true hides %s)", name, p, pre))
		} else if pre := under(p, "/tmp", "/var/tmp"); pre != "" {
			hidden = append(hidden, fmt.Sprintf("%s=%s (PrivateTmp=true gives the service an empty %s)", name, p, pre))
		}
	}
	if len(hidden) > 0 {
		return fail("move them under /usr/local, /var/lib/ray or /etc/ray", "%s", strings.Join(hidden, "; "))
	}
	return ok("no generated path is under /home, /root, /run/user, /tmp or /var/tmp")
}

// checkSwap wants a swap cushion and a low vm.swappiness on the 4 GB class.
func checkSwap(e *Env) Result {
	p, _ := e.plan()
	small := e.Config.Profile == "1b" || (p.TotalMiB > 0 && p.TotalMiB <= 4096)
	mi, err := e.Host.Meminfo()
	if err != nil {
		return warn("", "cannot read /proc/meminfo: %v", err)
	}
	sw, swErr := e.Host.Swappiness()
	msg := fmt.Sprintf("swap %d MiB", mi.SwapTotalKiB>>10)
	if swErr == nil {
		msg += fmt.Sprintf(", vm.swappiness=%d", sw)
	}
	if !small {
		return ok("%s (not required above the 4 GB class)", msg)
	}
	if mi.SwapTotalKiB == 0 {
		return warn("raygw swap-plan (review, then run it as root)", "%s: the 4 GB profile needs a swap cushion", msg)
	}
	if swErr == nil && sw > 10 {
		return warn("raygw swap-plan --sysctl-only --swappiness 10", "%s: the host swaps eagerly", msg)
	}
	return ok("%s", msg)
}

func checkLogStorage(e *Env) Result {
	return e.headroom("system logs", "/var/log", e.Config.Deploy.MinFreeStorageMiB)
}

func checkTmpStorage(e *Env) Result {
	min := e.Config.Deploy.MinFreeStorageMiB
	a, b := e.headroom("temporary files", "/tmp", min), e.headroom("temporary files", "/var/tmp", min)
	if a.Status >= b.Status && a.Status != OK {
		return a
	}
	if b.Status != OK {
		return b
	}
	return ok("%s; %s", a.Message, b.Message)
}
