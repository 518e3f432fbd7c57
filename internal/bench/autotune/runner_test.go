package autotune

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/bench"
	"github.com/raygw/raygw/internal/bench/upstream"
	"github.com/raygw/raygw/internal/bench/workload"
	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/engine/llamacpp"
)

// The test binary doubles as a fake `raygw serve` (and a fake llama-server
// it launches) so the runner's process handling is tested without an engine.
const fakeEnv = "RAYGW_AUTOTUNE_FAKE"

func TestMain(m *testing.M) {
	switch mode := os.Getenv(fakeEnv); mode {
	case "":
		os.Exit(m.Run())
	case "engine":
		fakeEngine()
	default:
		fakeGateway(mode)
	}
}

// fakeEngine records its pid and waits to be killed (at most a minute).
func fakeEngine() {
	if dir := os.Getenv("RAYGW_FAKE_PIDDIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, strconv.Itoa(os.Getpid())), nil, 0o644)
	}
	time.Sleep(time.Minute)
	os.Exit(0)
}

// fakeGateway loads the configuration as `raygw serve` does, launches the
// fake engine with the rendered argv, and serves /readyz plus a fixed-latency
// OpenAI API. Modes: ok, exit (fails at start), hang (never ready),
// stubborn (ignores SIGTERM).
func fakeGateway(mode string) {
	if mode == "exit" {
		fmt.Fprintln(os.Stderr, "boom: the fake gateway refuses to start")
		os.Exit(1)
	}
	opts := config.Options{Environ: os.Environ()}
	if i := slices.Index(os.Args, "--ray-env-file"); i > 0 {
		opts.EnvFile = os.Args[i+1]
	}
	cfg, err := config.Load(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	argv := llamacpp.FromConfig(cfg.Config).Argv()
	eng := exec.Command(os.Args[0], argv[1:]...)
	eng.Env = MergeEnv(os.Environ(), map[string]string{fakeEnv: "engine"})
	if err := eng.Start(); err != nil {
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	if mode == "stubborn" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(sig, syscall.SIGTERM)
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr())
	if err != nil {
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.Handle("/", upstream.New(upstream.Options{Latency: time.Millisecond, Model: cfg.Model.ID}))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if mode == "hang" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	go func() { _ = http.Serve(ln, mux) }()
	select {
	case <-sig:
	case <-time.After(time.Minute):
	}
	_ = eng.Process.Kill()
	_ = eng.Wait()
	os.Exit(0)
}

type fakeRun struct {
	runner *Runner
	env    string
	pids   string
}

func newFakeRun(t *testing.T, mode string) *fakeRun {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := filepath.Join(dir, "ray.env")
	os.WriteFile(env, []byte("RAY_LLAMA_CPP_BINARY_PATH=/opt/fake/llama-server\nRAY_LLAMA_CPP_MODEL_PATH=/m.gguf\n"+
		"RAY_MODEL_ID=fake\nRAY_LLAMA_CPP_PARALLEL=1\n"), 0o600)
	pids := filepath.Join(dir, "pids")
	os.Mkdir(pids, 0o755)
	b, err := os.ReadFile(filepath.Join("testdata", "tiny.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	items, err := workload.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	load := func(environ []string) (*config.Loaded, error) {
		return config.Load(config.Options{EnvFile: env, Environ: environ})
	}
	r := &Runner{Executable: exe, Args: []string{"--ray-env-file", env}, Load: load, WorkDir: dir,
		Environ:          append(os.Environ(), fakeEnv+"="+mode, "RAYGW_FAKE_PIDDIR="+pids),
		Bench:            bench.Options{Items: items, Concurrency: 2, Repeat: 2, Timeout: 10 * time.Second, KeepOutput: -1},
		CandidateTimeout: 30 * time.Second, StopTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	return &fakeRun{runner: r, env: env, pids: pids}
}

// enginesGone checks that every fake engine started is no longer running.
func (f *fakeRun) enginesGone(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir(f.pids)
	for _, e := range entries {
		pid, _ := strconv.Atoi(e.Name())
		for i := 0; i < 50 && alive(pid); i++ { // a killed process may take a moment to be reaped
			time.Sleep(20 * time.Millisecond)
		}
		if alive(pid) {
			t.Errorf("engine %d still running", pid)
		}
	}
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && !bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

func TestRunnerMeasures(t *testing.T) {
	f := newFakeRun(t, "ok")
	cands := []Candidate{{Index: 0, Changes: []Change{}},
		{Index: 1, Changes: []Change{{Name: LlamaParallel, From: "1", To: "2"}}}}
	var started []int
	f.runner.OnStart = func(c Candidate, n int) { started = append(started, c.Index) }
	rs, err := f.runner.Run(context.Background(), cands)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || !slices.Equal(started, []int{0, 1}) {
		t.Fatalf("results %d, started %v", len(rs), started)
	}
	for _, r := range rs {
		if r.Error != "" || r.Summary == nil || r.Summary.OK != 8 || r.Summary.Errors != 0 {
			t.Fatalf("candidate %d: error %q summary %+v\n%s", r.Index, r.Error, r.Summary, logTail(r.Log))
		}
		cfg, err := config.Load(config.Options{EnvFile: f.env, Environ: MergeEnv(nil, r.Env)})
		if err != nil {
			t.Fatal(err)
		}
		if want := llamacpp.FromConfig(cfg.Config).Argv(); !slices.Equal(r.Argv, want) {
			t.Errorf("candidate %d argv %q, want %q", r.Index, r.Argv, want)
		}
		if r.ArgvMatch == nil || !*r.ArgvMatch || !hasArgs(r.ObservedArgv, r.Argv) {
			t.Errorf("candidate %d observed %q, rendered %q", r.Index, r.ObservedArgv, r.Argv)
		}
		if r.Env["RAY_HOST"] != "127.0.0.1" || r.Env["RAY_CACHE_ENABLED"] != "false" {
			t.Errorf("candidate %d run env %v", r.Index, r.Env)
		}
	}
	if rs[1].Settings[LlamaParallel] != "2" || rs[0].Settings[LlamaParallel] != "1" ||
		!strings.Contains(strings.Join(rs[1].Argv, " "), "--parallel 2") {
		t.Errorf("settings %v / %v, argv %q", rs[0].Settings, rs[1].Settings, rs[1].Argv)
	}
	if rs[0].Env["RAY_PORT"] == rs[1].Env["RAY_PORT"] && rs[0].Env["RAY_STATE_DIR"] == rs[1].Env["RAY_STATE_DIR"] {
		t.Error("candidates share a port and state directory")
	}
	f.enginesGone(t)
}

func TestRunnerFailures(t *testing.T) {
	tests := []struct {
		mode, want string
		timeout    time.Duration
	}{
		{"exit", "boom: the fake gateway refuses to start", 30 * time.Second},
		{"hang", "candidate timeout (500ms) reached", 500 * time.Millisecond},
		{"stubborn", "", 30 * time.Second}, // SIGTERM ignored: the group is killed after StopTimeout
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			f := newFakeRun(t, tt.mode)
			f.runner.CandidateTimeout, f.runner.StopTimeout = tt.timeout, 300*time.Millisecond
			r := f.runner.RunOne(context.Background(), Candidate{Index: 0, Changes: []Change{}})
			if tt.want == "" {
				if r.Error != "" || r.Summary == nil || r.Summary.OK == 0 {
					t.Fatalf("error %q summary %+v", r.Error, r.Summary)
				}
			} else if !strings.Contains(r.Error, tt.want) || !strings.Contains(r.Error, "gateway not ready") {
				t.Fatalf("error %q, want %q", r.Error, tt.want)
			}
			f.enginesGone(t)
		})
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"PATH=/bin", "RAY_PORT=3000", "RAY_X=1"}, map[string]string{"RAY_PORT": "4000", "RAY_A": "b"})
	want := []string{"PATH=/bin", "RAY_X=1", "RAY_A=b", "RAY_PORT=4000"}
	if !slices.Equal(got, want) {
		t.Errorf("MergeEnv = %q, want %q", got, want)
	}
}

func TestProcHelpers(t *testing.T) {
	tests := []struct {
		stat string
		want int
	}{
		{"123 (llama-server) S 77 123 123 0", 77},
		{"5 (a (b) c) R 9 5", 9},
		{"garbage", -1},
	}
	for _, tt := range tests {
		if got := parentOf([]byte(tt.stat)); got != tt.want {
			t.Errorf("parentOf(%q) = %d, want %d", tt.stat, got, tt.want)
		}
	}
	want := []string{"/usr/local/bin/llama-server", "--port", "1"}
	if !hasArgs([]string{"/lib/ld.so", "--library-path", "x", "/usr/bin/llama-server", "--port", "1"}, want) {
		t.Error("a wrapper's command line does not match")
	}
	if hasArgs([]string{"/usr/bin/llama-server", "--port", "2"}, want) {
		t.Error("different arguments match")
	}
}
