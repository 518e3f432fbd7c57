package autotune

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raygw/raygw/internal/bench"
	"github.com/raygw/raygw/internal/bench/report"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/llamacpp"
)

// ErrCandidateTimeout means a candidate did not finish within its bound.
var ErrCandidateTimeout = errors.New("candidate timeout")

// Runner measures candidates one at a time, each on its own `raygw serve`
// in managed mode: the gateway launches llama-server from the candidate's
// configuration, so the engine runs exactly the rendered launch profile.
type Runner struct {
	// Executable is the raygw binary, started as `Executable Args... serve`.
	Executable string
	// Args are global flags placed before "serve" (--profile,
	// --ray-env-file, --config): the base configuration's sources.
	Args []string
	// Environ is the base environment (os.Environ()); the candidate's and
	// the run's RAY_* settings replace its entries of the same name.
	Environ []string
	// Load resolves the configuration the gateway will load from an
	// environment: the same sources Args names.
	Load func(environ []string) (*config.Loaded, error)
	// Bench is the workload run against each candidate (Targets and Client
	// are set per candidate).
	Bench bench.Options
	// CandidateTimeout bounds one candidate from start to the end of its
	// workload (default 10 minutes); StopTimeout bounds the SIGTERM wait
	// before the process group is killed (default 15 s).
	CandidateTimeout time.Duration
	StopTimeout      time.Duration
	// WorkDir holds each candidate's gateway log and state directory.
	WorkDir string
	// OnStart and OnResult report progress; both may be nil.
	OnStart  func(c Candidate, n int)
	OnResult func(r Result, n int)
	Logger   *slog.Logger
	// Now and FreePort default to time.Now and a loopback listener.
	Now      func() time.Time
	FreePort func() (int, error)

	log *slog.Logger
}

// RunSettings are the RAY_* values every candidate's gateway gets besides
// its overrides: loopback ports, a scratch state directory, managed mode, and
// the stages that would hide or distort the measurement switched off (client
// auth and rate limits, which the bench does not need on a private port; the
// response cache, which would answer repeated prompts without the engine; the
// async queue). A short drain keeps stops quick.
func RunSettings(gatewayPort, enginePort int, stateDir string) map[string]string {
	return map[string]string{
		"RAY_ENGINE_MODE":         "managed",
		"RAY_HOST":                "127.0.0.1",
		"RAY_PORT":                strconv.Itoa(gatewayPort),
		"RAY_LLAMA_CPP_HOST":      "127.0.0.1",
		"RAY_LLAMA_CPP_PORT":      strconv.Itoa(enginePort),
		"RAY_LLAMA_CPP_BASE_URL":  "http://127.0.0.1:" + strconv.Itoa(enginePort),
		"RAY_STATE_DIR":           stateDir,
		"RAY_AUTH_ENABLED":        "false",
		"RAY_RATE_LIMIT_ENABLED":  "false",
		"RAY_CACHE_ENABLED":       "false",
		"RAY_ASYNC_QUEUE_ENABLED": "false",
		"RAY_SHUTDOWN_DRAIN_MS":   "2000",
	}
}

// MergeEnv returns environ with every key of set replaced by set's value
// (set's entries appended in name order).
func MergeEnv(environ []string, set map[string]string) []string {
	out := make([]string, 0, len(environ)+len(set))
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	return out
}

func (r *Runner) defaults() {
	if r.CandidateTimeout <= 0 {
		r.CandidateTimeout = 10 * time.Minute
	}
	if r.StopTimeout <= 0 {
		r.StopTimeout = 15 * time.Second
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.FreePort == nil {
		r.FreePort = freePort
	}
	if r.log == nil {
		r.log = cmp.Or(r.Logger, slog.Default()).With("component", "autotune")
	}
}

// Run measures each candidate in order and returns their results. It stops
// early, returning what finished, when ctx ends.
func (r *Runner) Run(ctx context.Context, cands []Candidate) ([]Result, error) {
	r.defaults()
	var out []Result
	for _, c := range cands {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if r.OnStart != nil {
			r.OnStart(c, len(cands))
		}
		res := r.RunOne(ctx, c)
		out = append(out, res)
		if r.OnResult != nil {
			r.OnResult(res, len(cands))
		}
	}
	return out, ctx.Err()
}

// RunOne starts a gateway with the candidate's settings, waits for /readyz,
// sends one warm-up request, runs the workload, stops the gateway and
// returns the figures. Failures are recorded in Result.Error.
func (r *Runner) RunOne(ctx context.Context, c Candidate) Result {
	r.defaults()
	start := r.Now()
	res := Result{Candidate: c, Overrides: c.Overrides()}
	err := r.runOne(ctx, &res)
	if err != nil {
		res.Error = err.Error()
		r.log.Warn("candidate failed", "candidate", c.Index, "err", err)
	}
	res.DurationMS = float64(r.Now().Sub(start)) / float64(time.Millisecond)
	return res
}

func (r *Runner) runOne(parent context.Context, res *Result) error {
	gwPort, err := r.FreePort()
	if err != nil {
		return err
	}
	enPort, err := r.FreePort()
	if err != nil {
		return err
	}
	name := fmt.Sprintf("candidate-%02d", res.Index)
	state := filepath.Join(r.WorkDir, name+"-state")
	defer os.RemoveAll(state)
	res.Env = RunSettings(gwPort, enPort, state)
	maps.Copy(res.Env, res.Overrides)
	environ := MergeEnv(r.Environ, res.Env)
	cfg, err := r.Load(environ)
	if err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	res.Settings = knobSettings(cfg)
	res.Argv = llamacpp.FromConfig(cfg.Config).Argv()
	res.Log = filepath.Join(r.WorkDir, name+".log")

	ctx, cancel := context.WithTimeoutCause(parent, r.CandidateTimeout,
		fmt.Errorf("%w (%s) reached", ErrCandidateTimeout, r.CandidateTimeout))
	defer cancel()
	ch, err := startChild(r.Executable, append(slices.Clone(r.Args), "serve"), environ, res.Log)
	if err != nil {
		return err
	}
	defer ch.stop(r.StopTimeout)
	url := "http://" + cfg.ListenAddr()
	if err := ch.waitReady(ctx, url, 100*time.Millisecond); err != nil {
		return err
	}
	ch.findEngine(res.Argv)
	if ch.engineCmdline != nil {
		res.ObservedArgv = ch.engineCmdline
		match := hasArgs(ch.engineCmdline, res.Argv)
		res.ArgvMatch = &match
	}
	sum, err := r.measure(ctx, url, cfg.Model.ID, res.Index)
	res.Summary = sum
	return err
}

// measure sends the warm-up request, then the workload, and returns the
// workload's summary.
func (r *Runner) measure(ctx context.Context, url, model string, idx int) (*report.Summary, error) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(r.Bench.Concurrency, 4),
		IdleConnTimeout: 30 * time.Second, DisableCompression: true}}
	defer client.CloseIdleConnections()
	o := r.Bench
	o.Targets = []bench.Target{{Label: "c" + strconv.Itoa(idx), URL: url, Model: model}}
	o.Client, o.Logger = client, r.log
	warm := o
	warm.Items, warm.Repeat, warm.Concurrency, warm.Schedule, warm.OnDone = o.Items[:1], 1, 1, bench.Closed, nil
	rep, err := bench.Run(ctx, warm)
	if err != nil {
		return nil, fmt.Errorf("warm-up request: %w", causeOf(ctx, err))
	}
	if s := rep.Summaries[0]; s.Errors > 0 {
		return nil, fmt.Errorf("warm-up request failed: %s", rep.Rows[0].Error)
	}
	rep, err = bench.Run(ctx, o)
	if rep == nil {
		return nil, err
	}
	s := rep.Summaries[0]
	if err != nil {
		return &s, fmt.Errorf("workload stopped after %d requests: %w", len(rep.Rows), causeOf(ctx, err))
	}
	return &s, nil
}

func causeOf(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil {
		return c
	}
	return err
}

// knobSettings lists every searched setting's value in cfg.
func knobSettings(cfg *config.Loaded) map[string]string {
	out := map[string]string{}
	for _, rv := range cfg.Resolved() {
		if _, ok := knobByName(rv.Name); ok {
			out[rv.Name] = rv.Value
		}
	}
	return out
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
