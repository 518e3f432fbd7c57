package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/bench/autotune"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/testenv"
)

var autotuneWorkload = filepath.Join("..", "bench", "autotune", "testdata", "tiny.jsonl")

// autotuneEnv writes a small managed-mode configuration for the test model:
// three slots of 256 tokens, one thread, a 2-request scheduler.
func autotuneEnv(t *testing.T, binary, model string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ray.env")
	body := strings.Join([]string{
		"RAY_LLAMA_CPP_BINARY_PATH=" + binary,
		"RAY_LLAMA_CPP_MODEL_PATH=" + model,
		"RAY_MODEL_ID=stories",
		"RAY_LLAMA_CPP_CTX_SIZE=768",
		"RAY_LLAMA_CPP_PARALLEL=3",
		"RAY_LLAMA_CPP_ENABLE_UNIFIED_KV=false",
		"RAY_LLAMA_CPP_THREADS=1",
		"RAY_LLAMA_CPP_THREADS_BATCH=1",
		"RAY_LLAMA_CPP_THREADS_HTTP=4",
		"RAY_LLAMA_CPP_BATCH_SIZE=64",
		"RAY_LLAMA_CPP_UBATCH_SIZE=32",
		"RAY_LLAMA_CPP_CACHE_RAM_MIB=0",
		"RAY_SCHEDULER_CONCURRENCY=2",
		// host load must not change what the candidates see
		"RAY_GRACEFUL_DEGRADATION_ENABLED=false",
		"RAY_ADAPTIVE_TUNING_ENABLED=false",
		"RAY_ADAPTIVE_LEARNED_FAMILY_CAP_ENABLED=false",
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBenchAutotuneFlagErrors(t *testing.T) {
	env := autotuneEnv(t, "/opt/llama-server", "/m.gguf")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "fast"}, `--mode: expected full or scheduler, got "fast"`},
		{[]string{"--objective", "speed"}, `--objective: expected throughput, ttft-p95 or latency-p95, got "speed"`},
		{[]string{"--max-candidates", "0"}, "--max-candidates: must be at least 1"},
		{[]string{"--repeat", "0"}, "--repeat: must be at least 1"},
		{[]string{"--concurrency", "-1"}, "--concurrency: must be at least 1"},
		{[]string{"--candidate-timeout", "0s"}, "--candidate-timeout: must be above 0"},
		{[]string{"--min-quality", "1.5"}, "--min-quality: must be between 0 and 1"},
		{[]string{"--tie-margin", "1"}, "--tie-margin: must be at least 0 and below 1"},
		{[]string{"--memory-mib", "-5"}, "--memory-mib: must not be negative"},
		{[]string{"--workload", "/nonexistent.jsonl", "--dry-run"}, "/nonexistent.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			out, err := runCLI(t, append([]string{"bench", "autotune", "--ray-env-file", env}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q\n%s", err, tt.want, out)
			}
			var ee *ExitError
			if strings.HasPrefix(tt.want, "--") && (!errors.As(err, &ee) || ee.Code != 2) {
				t.Errorf("exit code of %v is not 2", err)
			}
		})
	}
}

func TestBenchAutotuneDryRun(t *testing.T) {
	env := autotuneEnv(t, "/opt/llama-server", "/m.gguf")
	t.Run("full", func(t *testing.T) {
		out, err := runCLI(t, "bench", "autotune", "--ray-env-file", env, "--workload", autotuneWorkload,
			"--mode", "full", "--max-candidates", "5", "--dry-run")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, want := range []string{
			"mode full: 5 candidates",
			"candidate 0 (0 changed, relative 0.00): current\n  argv: /opt/llama-server --model /m.gguf",
			"candidate 1 (1 changed, relative 0.33): LLAMA_CPP_PARALLEL=2\n  argv: /opt/llama-server",
			"--parallel 2 ",
			"candidate 4 (1 changed, relative 0.50): SCHEDULER_CONCURRENCY=3",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if n := strings.Count(out, "  argv: "); n != 5 {
			t.Errorf("%d argv lines, want 5:\n%s", n, out)
		}
	})
	t.Run("scheduler", func(t *testing.T) {
		out, err := runCLI(t, "bench", "autotune", "--ray-env-file", env, "--workload", autotuneWorkload,
			"--max-candidates", "3", "--dry-run")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if n := strings.Count(out, "  argv: "); n != 1 || strings.Contains(out, "LLAMA_CPP_PARALLEL=") ||
			!strings.Contains(out, "mode scheduler: 3 candidates") {
			t.Errorf("scheduler dry run:\n%s", out)
		}
	})
}

// TestBenchAutotuneFullAgainstLlamaServer runs a full-mode autotune on the
// real llama-server and the tiny model.
func TestBenchAutotuneFullAgainstLlamaServer(t *testing.T) {
	bin := testenv.Raygw(t)
	prev := autotuneExecutable
	autotuneExecutable = func() (string, error) { return bin, nil }
	t.Cleanup(func() { autotuneExecutable = prev })
	env := autotuneEnv(t, testenv.LlamaServer(t), testenv.Model(t))
	out := filepath.Join(t.TempDir(), "autotune.json")

	text, err := runCLI(t, "bench", "autotune", "--ray-env-file", env, "--workload", autotuneWorkload,
		"--mode", "full", "--max-candidates", "3", "--concurrency", "2", "--candidate-timeout", "40s", "--out", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep autotune.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Candidates) != 3 || rep.Winner == nil {
		t.Fatalf("candidates %d winner %v\n%s", len(rep.Candidates), rep.Winner, text)
	}
	best := -1.0
	for _, c := range rep.Candidates {
		if c.Error != "" || c.Summary == nil || c.Summary.OK != 4 || !c.Qualified {
			t.Fatalf("candidate %d: error %q summary %+v disqualified %q", c.Index, c.Error, c.Summary, c.Disqualified)
		}
		cfg, err := config.Load(config.Options{EnvFile: env, Environ: autotune.MergeEnv(nil, c.Env)})
		if err != nil {
			t.Fatal(err)
		}
		if want := llamacpp.FromConfig(cfg.Config).Argv(); !slices.Equal(c.Argv, want) {
			t.Errorf("candidate %d argv\n%q\nwant\n%q", c.Index, c.Argv, want)
		}
		if c.ArgvMatch == nil || !*c.ArgvMatch {
			t.Errorf("candidate %d: running llama-server %q does not end with %q", c.Index, c.ObservedArgv, c.Argv[1:])
		}
		best = max(best, c.Summary.ThroughputTokensPerSec)
	}
	if slices.Equal(rep.Candidates[0].Argv[9:], rep.Candidates[1].Argv[9:]) {
		t.Error("full mode ran two candidates with one launch profile")
	}
	win := rep.Find(*rep.Winner)
	if win.Summary.ThroughputTokensPerSec != best || rep.Candidates[0].Index != win.Index {
		t.Errorf("winner %d has %.1f tok/s, best is %.1f", win.Index, win.Summary.ThroughputTokensPerSec, best)
	}
	// The printed env lines, appended to the env file, load as the winner's values.
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "RAY_") {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(win.Changes) {
		t.Fatalf("printed %q for changes %v", lines, win.Changes)
	}
	base, _ := os.ReadFile(env)
	tuned := filepath.Join(t.TempDir(), "tuned.env")
	os.WriteFile(tuned, append(base, []byte(strings.Join(lines, "\n")+"\n")...), 0o600)
	cfg, err := config.Load(config.Options{EnvFile: tuned})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cfg.Resolved() {
		if v, ok := win.Settings[r.Name]; ok && v != r.Value {
			t.Errorf("%s loads as %q, the winner ran %q", r.Name, r.Value, v)
		}
	}
	t.Logf("\n%s", text)
}
