package doctor

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/ops/engineprobe"
	"github.com/raygw/raygw/internal/ops/gguf"
	"github.com/raygw/raygw/internal/ops/hostfs"
	"github.com/raygw/raygw/internal/ops/memplan"
	"github.com/raygw/raygw/internal/ops/storage"
)

// state caches what several checks share, computed on first use.
type state struct {
	plan      *memplan.Plan
	planErr   error
	planDone  bool
	user      *hostfs.User
	userErr   error
	userDone  bool
	model     *gguf.Model
	modelErr  error
	modelDone bool
	help      string
	helpErr   error
	helpDone  bool
	caddy     string
	caddyErr  error
	caddyDone bool
}

func (e *Env) plan() (memplan.Plan, error) {
	s := e.state
	if !s.planDone {
		s.planDone = true
		p, err := memplan.For(e.Config.Config, e.MemoryMiB)
		s.plan, s.planErr = &p, err
	}
	return *s.plan, s.planErr
}

func (e *Env) user() (hostfs.User, error) {
	s := e.state
	if !s.userDone {
		s.userDone = true
		u, err := e.Host.LookupUser(e.Config.Deploy.ServiceUser)
		s.user, s.userErr = &u, err
	}
	return *s.user, s.userErr
}

func (e *Env) launch() llamacpp.Launch { return llamacpp.FromConfig(e.Config.Config) }

func (e *Env) modelPath() string { return e.launch().ModelPath }

func (e *Env) model() (*gguf.Model, error) {
	s := e.state
	if !s.modelDone {
		s.modelDone = true
		s.model, s.modelErr = gguf.Open(e.Host.Path(e.modelPath()))
	}
	return s.model, s.modelErr
}

func (e *Env) gatewayBinary() string {
	if e.GatewayBinary != "" {
		return e.GatewayBinary
	}
	return e.Config.Deploy.GatewayRuntimeBinary
}

// asUser returns the prefix that runs a command as the service user, or nil
// (run as this process) when that is impossible here, with the reason.
func (e *Env) asUser() ([]string, string) {
	if !e.Host.IsReal() {
		return nil, "fabricated host tree: ran as the current user"
	}
	u, err := e.user()
	if err != nil {
		return nil, "service user unknown: ran as the current user"
	}
	if uint32(os.Geteuid()) == u.UID {
		return nil, ""
	}
	argv, err := engineprobe.AsUser(e.Config.Deploy.ServiceUser, u.UID, u.GID, []string{})
	if err != nil {
		return nil, fmt.Sprintf("not checked as %s (%v)", u.Name, err)
	}
	return argv, ""
}

func (e *Env) llamaHelp() (string, error) {
	s := e.state
	if !s.helpDone {
		s.helpDone = true
		prefix, _ := e.asUser()
		s.help, s.helpErr = engineprobe.Help(e.Ctx, e.Timeout, prefix, e.Host.Path(e.Config.LlamaCpp.BinaryPath))
	}
	return s.help, s.helpErr
}

// caddyPath finds caddy: --caddy-binary, RAY_DEPLOY_CADDY_BINARY, then PATH.
func (e *Env) caddyPath() (string, error) {
	s := e.state
	if s.caddyDone {
		return s.caddy, s.caddyErr
	}
	s.caddyDone = true
	var tried []string
	for _, c := range []string{e.CaddyBinary, e.Config.Deploy.CaddyBinary} {
		if c == "" {
			continue
		}
		if p, err := e.Host.LookPath(c, hostfs.DefaultPath); err == nil {
			s.caddy = p
			return p, nil
		}
		tried = append(tried, c)
	}
	p, err := e.Host.LookPath("caddy", hostfs.DefaultPath)
	if err != nil {
		s.caddyErr = fmt.Errorf("caddy not found (tried %s and PATH)", strings.Join(tried, ", "))
		return "", s.caddyErr
	}
	s.caddy = p
	return p, nil
}

// headroom measures the filesystem of host path p against minMiB.
func (e *Env) headroom(label, p string, minMiB int) Result {
	u, measured, err := e.Host.Usage(p)
	if err != nil {
		return fail("check the path exists and is readable", "%s %s: %v", label, p, err)
	}
	if prob := storage.Headroom(u, minMiB); prob != "" {
		return fail("free space on "+measured+" (see raygw storage), or lower RAY_DEPLOY_MIN_FREE_STORAGE_MIB",
			"%s %s: %s", label, where(p, measured), prob)
	}
	return ok("%s %s: %d MiB free, %d inodes free (need %d MiB)", label, where(p, measured), u.AvailMiB(), u.FreeInodes, minMiB)
}

func where(p, measured string) string {
	if path.Clean(p) == measured {
		return measured
	}
	return p + " (measured at " + measured + ")"
}

func under(p string, prefixes ...string) string {
	p = path.Clean(p)
	for _, pre := range prefixes {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return pre
		}
	}
	return ""
}

func mib(b uint64) uint64 { return (b + (1<<20 - 1)) >> 20 }
