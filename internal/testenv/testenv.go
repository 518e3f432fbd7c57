// Package testenv finds the real engine and model for tests and starts
// llama-server processes that are stopped when the test ends.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// RepoRoot is the repository's top directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Model returns the GGUF used by tests: $RAYGW_TEST_MODEL, else the shared
// story model beside the repository. It skips the test when neither exists.
func Model(t testing.TB) string {
	t.Helper()
	p := os.Getenv("RAYGW_TEST_MODEL")
	if p == "" {
		p = filepath.Join(RepoRoot(), "..", "shared", "models", "stories260K.gguf")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test model not found at %s (set RAYGW_TEST_MODEL): %v", p, err)
	}
	return p
}

var (
	engineOnce sync.Once
	enginePath string
	engineErr  error
)

// LlamaServer returns a working llama-server: $RAYGW_LLAMA_SERVER, else what
// scripts/install-llama-server.sh prints (it installs once, then is cached).
func LlamaServer(t testing.TB) string {
	t.Helper()
	engineOnce.Do(func() {
		if p := os.Getenv("RAYGW_LLAMA_SERVER"); p != "" {
			enginePath = p
			return
		}
		var out, errb bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "install-llama-server.sh"))
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			engineErr = fmt.Errorf("install-llama-server.sh: %v: %s", err, errb.String())
			return
		}
		enginePath = strings.TrimSpace(out.String())
	})
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	return enginePath
}

// EngineTool returns a sibling tool of llama-server (llama-bench, llama-quantize).
func EngineTool(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(LlamaServer(t)), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found beside llama-server: %v", name, err)
	}
	return p
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Engine is a llama-server started for one test.
type Engine struct {
	URL  string
	Port int
	Cmd  *exec.Cmd
	Log  *SyncBuffer
}

// StartLlamaServer starts llama-server on a free loopback port with the test
// model and extra args, waits for /health, and stops it at cleanup.
func StartLlamaServer(t testing.TB, extra ...string) *Engine {
	t.Helper()
	port := FreePort(t)
	args := append([]string{"--model", Model(t), "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--ctx-size", "512", "--parallel", "2", "--threads", "1", "--metrics", "--no-webui"}, extra...)
	log := &SyncBuffer{}
	cmd := exec.Command(LlamaServer(t), args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &Engine{URL: "http://127.0.0.1:" + strconv.Itoa(port), Port: port, Cmd: cmd, Log: log}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	// A server that refuses its arguments (or model) exits: fail at once
	// instead of waiting out the health timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := waitHealthy(ctx, e.URL); err != nil {
		t.Fatalf("llama-server did not become healthy: %v\n%s", err, log.String())
	}
	return e
}

// WaitHealthy polls base+"/health" until it answers 200 or timeout passes.
func WaitHealthy(base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return waitHealthy(ctx, base)
}

func waitHealthy(ctx context.Context, base string) error {
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = fmt.Errorf("status %d", resp.StatusCode)
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
