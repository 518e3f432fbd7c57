package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/bench"
	"github.com/raygw/raygw/internal/bench/autotune"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/ops/gguf"
	"github.com/raygw/raygw/internal/ops/render"
)

// autotuneExecutable is the raygw binary each candidate's gateway runs;
// tests point it at a built raygw.
var autotuneExecutable = os.Executable

type autotuneFlags struct {
	workload, mode, objective, out string
	maxCandidates, repeat          int
	concurrency, memoryMiB         int
	candidateTimeout, timeout      time.Duration
	minQuality, tieMargin          float64
	dryRun                         bool
}

func newBenchAutotuneCmd(g *Globals) *cobra.Command {
	f := &autotuneFlags{}
	cmd := &cobra.Command{
		Use:   "autotune",
		Short: "Search launch and scheduler settings for the best workload figures",
		Long: `raygw bench autotune measures the workload on candidate configurations and prints the
best one as env-file lines for /etc/ray/ray.env.

Candidates are the current configuration (always candidate 0) and the closest
variations of it: fewest settings changed first, then the smallest relative change,
capped at --max-candidates. --mode scheduler searches RAY_SCHEDULER_* settings; --mode
full also searches llama-server's launch profile (RAY_LLAMA_CPP_PARALLEL, CTX_SIZE,
BATCH_SIZE, UBATCH_SIZE, THREADS, THREADS_BATCH, CACHE_REUSE, ENABLE_UNIFIED_KV).

Each candidate runs on its own 'raygw serve' in managed mode on free loopback ports,
so llama-server starts with exactly the command line raygw renders for the deployed
backend unit. A candidate with a failed request or a failed quality check is
disqualified. --dry-run prints the candidates and their llama-server command lines.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd, g) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workload, "workload", "", "workload JSONL, one request per line (default: the checked-in email-1b.jsonl)")
	fl.StringVar(&f.mode, "mode", string(autotune.ModeScheduler), "scheduler (RAY_SCHEDULER_* only) or full (also the llama-server launch profile)")
	fl.IntVar(&f.maxCandidates, "max-candidates", autotune.DefaultMaxCandidates, "candidates measured, the current configuration included")
	fl.StringVar(&f.objective, "objective", string(autotune.Throughput), "ranking figure: throughput (completion tokens/s), ttft-p95 or latency-p95")
	fl.IntVar(&f.repeat, "repeat", 1, "replay the workload this many times per candidate")
	fl.IntVar(&f.concurrency, "concurrency", 2, "requests in flight (closed loop); match the load you expect")
	fl.DurationVar(&f.candidateTimeout, "candidate-timeout", 10*time.Minute, "limit for one candidate, from gateway start to the end of its workload")
	fl.DurationVar(&f.timeout, "timeout", 2*time.Minute, "limit for one request")
	fl.StringVar(&f.out, "out", "autotune-report.json", "JSON report path (empty: none)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the candidates and their llama-server command lines without running them")
	fl.Float64Var(&f.minQuality, "min-quality", 1, "lowest quality-check pass rate a candidate may have (0-1)")
	fl.Float64Var(&f.tieMargin, "tie-margin", 0, "figures within this fraction of the best tie; ties go to the fewest changes (e.g. 0.02)")
	fl.IntVar(&f.memoryMiB, "memory-mib", 0, "llama-server memory budget in MiB for launch candidates, from the GGUF estimate (0: none)")
	return cmd
}

// validate checks the flags, naming the bad one.
func (f *autotuneFlags) validate() (autotune.Mode, autotune.Objective, error) {
	bad := func(format string, a ...any) error { return &ExitError{Code: 2, Err: fmt.Errorf(format, a...)} }
	mode, err := autotune.ParseMode(f.mode)
	if err != nil {
		return "", "", bad("--mode: expected full or scheduler, got %q", f.mode)
	}
	obj, err := autotune.ParseObjective(f.objective)
	if err != nil {
		return "", "", bad("--objective: expected throughput, ttft-p95 or latency-p95, got %q", f.objective)
	}
	switch {
	case f.maxCandidates < 1:
		return "", "", bad("--max-candidates: must be at least 1, got %d", f.maxCandidates)
	case f.repeat < 1:
		return "", "", bad("--repeat: must be at least 1, got %d", f.repeat)
	case f.concurrency < 1:
		return "", "", bad("--concurrency: must be at least 1, got %d", f.concurrency)
	case f.candidateTimeout <= 0:
		return "", "", bad("--candidate-timeout: must be above 0, got %s", f.candidateTimeout)
	case f.timeout <= 0:
		return "", "", bad("--timeout: must be above 0, got %s", f.timeout)
	case f.minQuality < 0 || f.minQuality > 1:
		return "", "", bad("--min-quality: must be between 0 and 1, got %g", f.minQuality)
	case f.tieMargin < 0 || f.tieMargin >= 1:
		return "", "", bad("--tie-margin: must be at least 0 and below 1, got %g", f.tieMargin)
	case f.memoryMiB < 0:
		return "", "", bad("--memory-mib: must not be negative, got %d", f.memoryMiB)
	}
	return mode, obj, nil
}

func (f *autotuneFlags) run(cmd *cobra.Command, g *Globals) error {
	mode, obj, err := f.validate()
	if err != nil {
		return err
	}
	cfg, err := g.Load(nil)
	if err != nil {
		return err
	}
	items, wlName, err := loadWorkload(f.workload, "email-1b.jsonl")
	if err != nil {
		return err
	}
	space := autotune.Space{Mode: mode, Base: resolvedValues(cfg), Max: f.maxCandidates,
		Need:    autotune.EstimateNeed(items, cfg.Model.MaxOutputTokens),
		Machine: autotune.Machine{VCPUs: runtime.NumCPU(), MemoryBudgetMiB: f.memoryMiB}}
	if f.memoryMiB > 0 {
		if space.Machine.EstimateMiB, err = memoryEstimator(cfg); err != nil {
			return err
		}
	}
	plan, err := space.Generate()
	if err != nil {
		return err
	}
	load := candidateLoader(g)
	if f.dryRun {
		fmt.Fprintln(cmd.OutOrStdout(), "llama-server command lines use the configured host and port; a run uses free loopback ports")
		return autotune.WriteCandidates(cmd.OutOrStdout(), plan, func(c autotune.Candidate) (string, error) {
			a, err := deployArgv(load, c.Overrides())
			return render.QuoteArgv(a), err
		})
	}
	o := bench.Options{Items: items, WorkloadName: wlName, Schedule: bench.Closed, Concurrency: f.concurrency,
		Repeat: f.repeat, Timeout: f.timeout, KeepOutput: -1}
	rep, err := f.execute(cmd, g, cfg, plan, o, load)
	if rep == nil {
		return err
	}
	rep.Mode, rep.Objective, rep.Need, rep.VCPUs, rep.MemoryBudgetMiB = mode, obj, space.Need, space.Machine.VCPUs, f.memoryMiB
	if werr := f.finish(cmd.OutOrStdout(), rep, load); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if rep.Winner == nil {
		return &ExitError{Code: 3, Err: errors.New("no candidate qualified: every one failed a request, a quality check or its run")}
	}
	return nil
}

// execute runs every candidate and ranks the results.
func (f *autotuneFlags) execute(cmd *cobra.Command, g *Globals, cfg *config.Loaded, plan *autotune.Plan,
	o bench.Options, load func([]string) (*config.Loaded, error)) (*autotune.Report, error) {
	exe, err := autotuneExecutable()
	if err != nil {
		return nil, fmt.Errorf("find the raygw executable: %w", err)
	}
	if err := checkEngineFiles(cfg.Config); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "raygw-autotune-")
	if err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stderr := cmd.ErrOrStderr()
	r := &autotune.Runner{Executable: exe, Args: globalArgs(g), Environ: os.Environ(), Load: load, Bench: o,
		CandidateTimeout: f.candidateTimeout, WorkDir: work, Logger: slog.New(slog.DiscardHandler), // progress lines report failures
		OnStart: func(c autotune.Candidate, n int) {
			fmt.Fprintf(stderr, "[%d/%d] candidate %d: %s\n", c.Index+1, n, c.Index, c.Label())
		},
		OnResult: func(r autotune.Result, _ int) { fmt.Fprintf(stderr, "      %s\n", progressLine(&r)) },
	}
	start := time.Now()
	results, runErr := r.Run(ctx, plan.Candidates)
	rep := &autotune.Report{Tool: "raygw bench autotune", StartedAt: start.UTC(), Plan: plan, Workload: o.WorkloadName,
		Concurrency: o.Concurrency, Repeat: o.Repeat, MinQuality: f.minQuality, TieMargin: f.tieMargin,
		Interrupted: len(results) < len(plan.Candidates)}
	sc := autotune.Scoring{Objective: autotune.Objective(f.objective), MinQuality: f.minQuality, TieMargin: f.tieMargin}
	if w := autotune.Rank(results, sc); w >= 0 {
		rep.Winner = &w
	}
	rep.Candidates = results
	rep.DurationMS = float64(time.Since(start)) / float64(time.Millisecond)
	keepLogs := rep.Interrupted
	for i := range results {
		keepLogs = keepLogs || results[i].Error != ""
	}
	if keepLogs {
		fmt.Fprintf(stderr, "gateway logs kept in %s\n", work)
	} else {
		os.RemoveAll(work)
		for i := range rep.Candidates {
			rep.Candidates[i].Log = ""
		}
	}
	if runErr != nil {
		runErr = fmt.Errorf("stopped after %d of %d candidates: %w", len(results), len(plan.Candidates), runErr)
	}
	return rep, runErr
}

// finish writes the report, then prints the table and the winner's env
// lines (the report first, so a closed stdout cannot lose it).
func (f *autotuneFlags) finish(w io.Writer, rep *autotune.Report, load func([]string) (*config.Loaded, error)) error {
	var winner *autotune.Result
	if rep.Winner != nil {
		winner = rep.Find(*rep.Winner)
		a, err := deployArgv(load, winner.Overrides)
		if err != nil {
			return err
		}
		rep.DeployArgv = a
	}
	rep.WinnerEnv = autotune.EnvLines(winner, rep.Find(0), rep.Objective)
	if f.out != "" {
		if err := rep.WriteJSON(f.out); err != nil {
			return err
		}
	}
	if err := rep.WriteTable(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if winner != nil && len(winner.Changes) > 0 {
		fmt.Fprintln(w, "# set in /etc/ray/ray.env (a later line overrides an earlier one), then restart raygw:")
	}
	for _, l := range rep.WinnerEnv {
		fmt.Fprintln(w, l)
	}
	if winner != nil && rep.Mode == autotune.ModeFull {
		fmt.Fprintf(w, "# llama-server: %s\n", render.QuoteArgv(rep.DeployArgv))
	}
	if f.out != "" {
		fmt.Fprintf(w, "report: %s\n", f.out)
	}
	return nil
}

func progressLine(r *autotune.Result) string {
	d := time.Duration(r.DurationMS * float64(time.Millisecond)).Round(100 * time.Millisecond)
	if r.Error != "" {
		return fmt.Sprintf("failed after %s: %s", d, r.Error)
	}
	s := r.Summary
	return fmt.Sprintf("%d/%d ok, throughput %.1f tok/s, ttft p95 %.1fms, e2e p95 %.1fms (%s)",
		s.OK, s.Requests, s.ThroughputTokensPerSec, s.TTFTMS.P95, s.E2EMS.P95, d)
}

// candidateLoader resolves the configuration a candidate's gateway loads from
// its environment: the same sources as g.Load, with environ in place of the
// process environment.
func candidateLoader(g *Globals) func([]string) (*config.Loaded, error) {
	flags := map[string]string{}
	if g.Profile != "" {
		flags["RAY_PROFILE"] = g.Profile
	}
	return func(environ []string) (*config.Loaded, error) {
		return config.Load(config.Options{ConfigFile: g.ConfigFile, EnvFile: g.EnvFile, Environ: environ, Flags: maps.Clone(flags)})
	}
}

// deployArgv is llama-server's command line for the overrides with the
// configured host and port.
func deployArgv(load func([]string) (*config.Loaded, error), overrides map[string]string) ([]string, error) {
	cfg, err := load(autotune.MergeEnv(os.Environ(), overrides))
	if err != nil {
		return nil, err
	}
	return llamacpp.FromConfig(cfg.Config).Argv(), nil
}

// globalArgs passes the base configuration's sources to `raygw serve`.
func globalArgs(g *Globals) []string {
	var args []string
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	if g.Profile != "" {
		args = append(args, "--profile", g.Profile)
	}
	if g.EnvFile != "" {
		args = append(args, "--ray-env-file", abs(g.EnvFile))
	}
	if g.ConfigFile != "" {
		args = append(args, "--config", abs(g.ConfigFile))
	}
	return args
}

func resolvedValues(cfg *config.Loaded) map[string]string {
	out := map[string]string{}
	for _, r := range cfg.Resolved() {
		out[r.Name] = r.Value
	}
	return out
}

// checkEngineFiles makes sure the managed gateways can start llama-server.
func checkEngineFiles(c *config.Config) error {
	l := llamacpp.FromConfig(c)
	if _, err := os.Stat(l.Binary); err != nil {
		return fmt.Errorf("RAY_LLAMA_CPP_BINARY_PATH: autotune starts llama-server itself: %w", err)
	}
	if _, err := os.Stat(l.ModelPath); err != nil {
		return fmt.Errorf("RAY_LLAMA_CPP_MODEL_PATH: %w", err)
	}
	return nil
}

// memoryEstimator projects llama-server's memory for a launch shape from
// the model's GGUF metadata.
func memoryEstimator(cfg *config.Loaded) (func(autotune.Shape) (int, error), error) {
	m, err := gguf.Open(llamacpp.FromConfig(cfg.Config).ModelPath)
	if err != nil {
		return nil, fmt.Errorf("--memory-mib needs the model's GGUF metadata: %w", err)
	}
	return func(s autotune.Shape) (int, error) {
		e, err := m.Estimate(gguf.Profile{CtxSize: s.CtxSize, Parallel: s.Parallel, BatchSize: s.BatchSize, UBatchSize: s.UBatchSize})
		if err != nil {
			return 0, err
		}
		return int((e.TotalBytes() + 1<<20 - 1) >> 20), nil
	}, nil
}
