package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/raygw/raygw/internal/ops/hostfs"
	"github.com/raygw/raygw/internal/ops/memplan"
	"github.com/raygw/raygw/internal/ops/render"
)

func checkConfig(e *Env) Result {
	if len(e.Config.Warnings) > 0 {
		return warn("remove or correct the named variables", "%s", strings.Join(e.Config.Warnings, "; "))
	}
	n := 0
	for _, src := range e.Config.Sources {
		if src != "profile" {
			n++
		}
	}
	return ok("profile %s loaded; %d settings override its defaults", e.Config.Profile, n)
}

func checkAuth(e *Env) Result {
	a := e.Config.Auth
	if !a.Enabled {
		return warn("set RAY_AUTH_ENABLED=true and put client keys in "+a.APIKeyEnv,
			"RAY_AUTH_ENABLED=false: anyone who reaches the gateway can use the model")
	}
	if err := e.Config.CheckStartup(); err != nil {
		return fail("put comma-separated client keys in "+a.APIKeyEnv+" in the env file", "%v", err)
	}
	for _, k := range a.APIKeys {
		if strings.HasPrefix(k, "replace-with") || len(k) < 16 {
			return fail("generate keys with: openssl rand -hex 32", "%s holds a placeholder or short key (%d characters)", a.APIKeyEnv, len(k))
		}
	}
	return ok("%d client key(s) in %s", len(a.APIKeys), a.APIKeyEnv)
}

func checkEnvFile(e *Env) Result {
	p := e.EnvFile
	if p == "" {
		if e.Host.Exists(render.DefaultEnvFile) {
			return warn("rerun with --ray-env-file "+render.DefaultEnvFile, "%s exists but was not loaded", render.DefaultEnvFile)
		}
		return fail("install the rendered ray.env.example as "+render.DefaultEnvFile+" (root:root, 0600) and pass --ray-env-file",
			"no env file: the generated units read %s", render.DefaultEnvFile)
	}
	fi, err := e.Host.Stat(p)
	if err != nil {
		return fail("create it from ray.env.example", "env file %s: %v", p, err)
	}
	uid, _, _ := hostfs.Owner(fi)
	fix := fmt.Sprintf("sudo chown root:root %s && sudo chmod 0600 %s", p, p)
	if uid != 0 {
		return fail(fix, "env file %s is owned by uid %d, not root", p, uid)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fail(fix, "env file %s has mode %04o; secrets must be readable by root only (0600)", p, fi.Mode().Perm())
	}
	return ok("env file %s is root-owned, mode %04o", p, fi.Mode().Perm())
}

func checkSystemd(e *Env) Result {
	fi, err := e.Host.Stat("/run/systemd/system")
	if err != nil || !fi.IsDir() {
		return fail("run raygw on a host booted with systemd", "/run/systemd/system is missing: systemd is not the init system here")
	}
	if _, err := e.Host.LookPath("systemctl", hostfs.DefaultPath); err != nil {
		return fail("apt-get install systemd", "systemctl not found: %v", err)
	}
	return ok("systemd is running and systemctl is available")
}

// checkUnits renders both units with their binaries resolved under the host
// root and runs the host's systemd-analyze verify on them.
func checkUnits(e *Env) Result {
	sa, err := e.Host.LookPath("systemd-analyze", hostfs.DefaultPath)
	if err != nil {
		return warn("apt-get install systemd", "systemd-analyze not found; generated units not verified")
	}
	c := *e.Config.Config
	c.Deploy.GatewayRuntimeBinary = e.Host.Path(e.gatewayBinary())
	c.LlamaCpp.BinaryPath = e.Host.Path(c.LlamaCpp.BinaryPath)
	files, err := render.All(&c, render.Options{EnvFile: e.EnvFile, MemoryMiB: e.MemoryMiB})
	if err != nil {
		return fail("correct the named setting", "cannot render units: %v", err)
	}
	dir, err := os.MkdirTemp("", "raygw-doctor-*")
	if err != nil {
		return fail("", "temp dir: %v", err)
	}
	defer os.RemoveAll(dir)
	if err := render.WriteFiles(dir, files); err != nil {
		return fail("", "%v", err)
	}
	err = render.VerifyUnits(e.Host.Path(sa), filepath.Join(dir, render.GatewayUnitName), filepath.Join(dir, render.LlamaUnitName))
	if err != nil {
		return fail("fix the reported unit problem (often a missing binary; see raygw stage)", "%v", err)
	}
	return ok("%s and %s pass systemd-analyze verify", render.GatewayUnitName, render.LlamaUnitName)
}

// checkMemoryTarget compares the memory target with detected RAM and the
// cgroup floors. A target up to 10% above MemTotal is normal (a "4 GB" VPS
// reports less after the kernel's reserve); up to 25% warns; beyond fails.
func checkMemoryTarget(e *Env) Result {
	p, err := e.plan()
	if err != nil {
		return fail(fmt.Sprintf("raise RAY_DEPLOY_MEMORY_MIB or lower RAY_DEGRADATION_MEMORY_RSS_THRESHOLD_MIB (llama-server needs %d MiB)", memplan.MinLlamaMiB), "%v", err)
	}
	mi, err := e.Host.Meminfo()
	if err != nil {
		return warn("", "cannot read detected RAM: %v", err)
	}
	ram := int(mi.MemTotalKiB >> 10)
	msg := fmt.Sprintf("%s=%d MiB on %d MiB RAM: gateway MemoryMax %dM (floor %dM), llama-server MemoryMax %dM (floor %dM), OS reserve %d MiB",
		p.Source, p.TotalMiB, ram, p.Gateway.MaxMiB, p.Gateway.MinMiB, p.Llama.MaxMiB, p.Llama.MinMiB, p.OSReserveMiB)
	fix := fmt.Sprintf("set RAY_DEPLOY_MEMORY_MIB=%d (or --memory-mib) to match this host", ram)
	switch {
	case p.TotalMiB*100 > ram*125:
		return fail(fix, "%s; the target exceeds detected RAM by more than 25%%", msg)
	case p.TotalMiB*100 > ram*110:
		return warn(fix, "%s; the target exceeds detected RAM by more than 10%%", msg)
	case p.Gateway.MinMiB+p.Llama.MinMiB > ram:
		return fail(fix, "%s; the cgroup floors exceed detected RAM", msg)
	}
	return ok("%s", msg)
}
