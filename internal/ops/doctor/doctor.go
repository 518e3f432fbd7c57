// Package doctor owns the VPS readiness checks: each check reads the host
// through a hostfs.Host (the real "/" or a fabricated tree), may run bounded
// external tools (systemd-analyze, caddy, llama-server --help, raygw version),
// and returns ok, warn or fail with a fix.
package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/ops/engineprobe"
	"github.com/raygw/raygw/internal/ops/hostfs"
)

// Status is a check's outcome; larger is worse.
type Status int

// Statuses.
const (
	OK Status = iota
	Warn
	Fail
)

func (s Status) String() string { return [...]string{"ok", "warn", "fail"}[s] }

// MarshalText writes the status as ok, warn or fail.
func (s Status) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Result is one check's outcome.
type Result struct {
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// RunFunc runs argv with a bound and returns its combined output.
type RunFunc func(ctx context.Context, timeout time.Duration, argv []string) ([]byte, error)

// Env is everything the checks read.
type Env struct {
	Host          *hostfs.Host
	Config        *config.Loaded
	EnvFile       string // host path of --ray-env-file ("" when none)
	ConfigFile    string // host path of --config ("" when none)
	CaddyBinary   string // --caddy-binary override
	GatewayBinary string // --gateway-runtime-binary override
	MemoryMiB     int    // --memory-mib override
	Arch          string // host architecture in GOARCH terms; runtime.GOARCH when empty
	Timeout       time.Duration
	Run           RunFunc
	Ctx           context.Context

	state *state
}

func (e *Env) defaults() {
	if e.Run == nil {
		e.Run = engineprobe.Run
	}
	if e.Timeout <= 0 {
		e.Timeout = engineprobe.DefaultTimeout
	}
	if e.Arch == "" {
		e.Arch = runtime.GOARCH
	}
	if e.Ctx == nil {
		e.Ctx = context.Background()
	}
}

// Check is one named check.
type Check struct {
	Name string
	Run  func(e *Env) Result
}

// Checks lists every check in output order.
func Checks() []Check {
	return []Check{
		{"config", checkConfig},
		{"auth", checkAuth},
		{"env-file", checkEnvFile},
		{"systemd", checkSystemd},
		{"systemd-units", checkUnits},
		{"memory-target", checkMemoryTarget},
		{"caddy", checkCaddy},
		{"caddyfile", checkCaddyfile},
		{"public-site", checkPublicSite},
		{"caddy-upstream", checkUpstream},
		{"caddy-storage", checkCaddyStorage},
		{"service-user", checkServiceUser},
		{"service-user-access", checkUserAccess},
		{"gateway-binary", checkGatewayBinary},
		{"working-directory", checkWorkingDir},
		{"llama-server", checkLlamaServer},
		{"llama-flags", checkLlamaFlags},
		{"model", checkModel},
		{"memory-fit", checkMemoryFit},
		{"gateway-budget", checkGatewayBudget},
		{"async-queue-storage", checkAsyncStorage},
		{"launch-profile", checkLaunchProfile},
		{"architecture", checkArch},
		{"hidden-paths", checkHiddenPaths},
		{"swap", checkSwap},
		{"log-storage", checkLogStorage},
		{"tmp-storage", checkTmpStorage},
	}
}

// Run runs the named checks (every check when none is named) in order; a
// panicking check becomes a failure.
func Run(e *Env, only ...string) []Result {
	e.defaults()
	e.state = &state{}
	out := make([]Result, 0, len(Checks()))
	for _, c := range Checks() {
		if len(only) == 0 || slices.Contains(only, c.Name) {
			out = append(out, runOne(e, c))
		}
	}
	return out
}

func runOne(e *Env, c Check) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Result{Name: c.Name, Status: Fail, Message: fmt.Sprintf("check crashed: %v", p)}
		}
	}()
	r = c.Run(e)
	r.Name = c.Name
	return r
}

// Worst is the worst status among results.
func Worst(rs []Result) Status {
	w := OK
	for _, r := range rs {
		w = max(w, r.Status)
	}
	return w
}

// ExitCode maps the worst status to the process exit code: 0 ok, 1 warn, 2 fail.
func ExitCode(rs []Result) int { return int(Worst(rs)) }

// WriteText prints one line per check: status, name, message (fix: ...).
func WriteText(w io.Writer, rs []Result) {
	for _, r := range rs {
		line := fmt.Sprintf("%-4s  %-19s  %s", r.Status, r.Name, r.Message)
		if r.Fix != "" && r.Status != OK {
			line += " (fix: " + r.Fix + ")"
		}
		fmt.Fprintln(w, line)
	}
}

// WriteJSON prints the results as a JSON object.
func WriteJSON(w io.Writer, rs []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Worst   Status   `json:"worst"`
		Results []Result `json:"results"`
	}{Worst(rs), rs})
}

func ok(format string, a ...any) Result {
	return Result{Status: OK, Message: fmt.Sprintf(format, a...)}
}

func warn(fix, format string, a ...any) Result {
	return Result{Status: Warn, Message: fmt.Sprintf(format, a...), Fix: fix}
}

func fail(fix, format string, a ...any) Result {
	return Result{Status: Fail, Message: fmt.Sprintf(format, a...), Fix: fix}
}
