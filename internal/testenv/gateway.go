package testenv

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Raygw builds the raygw binary once per test process and returns its path
// (with the race detector when RAYGW_TEST_RACE is set).
func Raygw(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "raygw-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "raygw")
		args := []string{"build", "-o", buildPath}
		if os.Getenv("RAYGW_TEST_RACE") != "" {
			// A gateway built with the race detector; with GORACE=halt_on_error=1
			// in the environment a race kills it, so the test fails.
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/raygw")...)
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// Gateway is a `raygw serve` process started for one test.
type Gateway struct {
	URL       string
	EngineURL string // llama-server's own URL in managed mode
	Cmd       *exec.Cmd
	Log       *SyncBuffer
	exited    chan struct{}
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// GatewayEnv is the environment of a managed-mode gateway serving the test
// model on free loopback ports, with auth and the async queue off. Tests
// override entries as needed.
func GatewayEnv(t testing.TB) map[string]string {
	t.Helper()
	return map[string]string{
		"RAY_ENGINE_MODE":                 "managed",
		"RAY_HOST":                        "127.0.0.1",
		"RAY_PORT":                        strconv.Itoa(FreePort(t)),
		"RAY_LLAMA_CPP_PORT":              strconv.Itoa(FreePort(t)),
		"RAY_LLAMA_CPP_BINARY_PATH":       LlamaServer(t),
		"RAY_LLAMA_CPP_MODEL_PATH":        Model(t),
		"RAY_LLAMA_CPP_CTX_SIZE":          "1024",
		"RAY_LLAMA_CPP_PARALLEL":          "2",
		"RAY_LLAMA_CPP_THREADS":           "1",
		"RAY_LLAMA_CPP_THREADS_BATCH":     "1",
		"RAY_LLAMA_CPP_THREADS_HTTP":      "4",
		"RAY_LLAMA_CPP_ENABLE_UNIFIED_KV": "false",
		"RAY_MODEL_ID":                    "stories",
		"RAY_MODEL_CONTEXT_WINDOW":        "2048",
		"RAY_AUTH_ENABLED":                "false",
		"RAY_RATE_LIMIT_ENABLED":          "false",
		"RAY_ASYNC_QUEUE_ENABLED":         "false",
		"RAY_STATE_DIR":                   t.TempDir(),
		"RAY_LOG_LEVEL":                   "debug",
		"RAY_SHUTDOWN_DRAIN_MS":           "10000",
		// Host load must not change what a test sees; tests of these stages
		// switch them on.
		"RAY_GRACEFUL_DEGRADATION_ENABLED":        "false",
		"RAY_ADAPTIVE_TUNING_ENABLED":             "false",
		"RAY_ADAPTIVE_LEARNED_FAMILY_CAP_ENABLED": "false",
	}
}

// StartGateway runs `raygw serve` with env (plus PATH and HOME) and waits
// until /readyz answers 200. The process is stopped at cleanup.
func StartGateway(t testing.TB, env map[string]string, args ...string) *Gateway {
	t.Helper()
	return startGateway(t, "/readyz", env, args)
}

// StartGatewayAlive is StartGateway that waits only for /healthz, for tests
// of a gateway whose engine is not ready.
func StartGatewayAlive(t testing.TB, env map[string]string, args ...string) *Gateway {
	t.Helper()
	return startGateway(t, "/healthz", env, args)
}

func startGateway(t testing.TB, probe string, env map[string]string, args []string) *Gateway {
	t.Helper()
	cmd := exec.Command(Raygw(t), append([]string{"serve"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "GORACE=" + os.Getenv("GORACE")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	log := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &Gateway{URL: "http://" + env["RAY_HOST"] + ":" + env["RAY_PORT"], Cmd: cmd, Log: log, exited: make(chan struct{})}
	if p := env["RAY_LLAMA_CPP_PORT"]; p != "" {
		g.EngineURL = "http://127.0.0.1:" + p
	}
	go func() { _ = cmd.Wait(); close(g.exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-g.exited
		if t.Failed() {
			t.Logf("raygw log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(g.URL + probe)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g
			}
		}
		select {
		case <-g.exited:
			t.Fatalf("raygw exited early:\n%s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("raygw not ready in 60s:\n%s", log.String())
		}
	}
}

// Exited is closed when the gateway process ends.
func (g *Gateway) Exited() <-chan struct{} { return g.exited }

// Signal sends sig to the gateway process.
func (g *Gateway) Signal(sig syscall.Signal) error { return g.Cmd.Process.Signal(sig) }
