// Package deploy_test runs the deployments control plane end to end with
// real llama-server replicas of the small test model on this machine.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/deploy"
	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/runtime"
	"github.com/raygw/raygw/internal/runtime/local"
	"github.com/raygw/raygw/internal/store"
	"github.com/raygw/raygw/internal/testenv"
)

// plane is a control plane with its HTTP surface for one test.
type plane struct {
	t     testing.TB
	M     *deploy.Manager
	DB    *store.DB
	Srv   *httptest.Server
	Dir   string
	Log   *testenv.SyncBuffer
	close func()
}

// launchDefaults is the RAY_LLAMA_CPP_* profile of the test gateway, with a
// tiny context and one thread per replica.
func launchDefaults(t testing.TB) deploy.Defaults {
	env := testenv.GatewayEnv(t)
	env["RAY_LLAMA_CPP_CTX_SIZE"] = "512"
	env["RAY_LLAMA_CPP_THREADS_HTTP"] = "2"
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	cfg, err := config.Load(config.Options{Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	return deploy.Defaults{Llama: llamacpp.FromConfig(cfg.Config), CPUs: 2}
}

// startPlane opens (or reopens) a control plane whose state lives in dir.
func startPlane(t testing.TB, dir string) *plane {
	t.Helper()
	logBuf := &testenv.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	db, err := store.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := deploy.NewManager(deploy.Options{
		Runtimes:       map[string]runtime.Runtime{"local": &local.Runtime{Logger: log}},
		Store:          db,
		Defaults:       launchDefaults(t),
		Logger:         log,
		ReconcileEvery: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(deploy.Handler(m))
	p := &plane{t: t, M: m, DB: db, Srv: srv, Dir: dir, Log: logBuf}
	closed := false
	p.close = func() {
		if closed {
			return
		}
		closed = true
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		db.Close()
	}
	t.Cleanup(func() {
		p.close()
		if t.Failed() {
			t.Logf("control plane log (tail):\n%s", tailString(logBuf.String(), 12000))
		}
	})
	return p
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// spec is a llama.cpp deployment of the test model with fast health checks.
func spec(t testing.TB, name string, replicas int) map[string]any {
	return map[string]any{
		"name": name, "model_name": name + "-model", "model_path": testenv.Model(t), "model_class": "llama.cpp",
		"replicas": replicas, "cpus_per_replica": 1,
		"engine_config": map[string]any{"ctx_size": 512, "parallel": 2},
		"health":        map[string]any{"interval_ms": 200, "timeout_ms": 200, "backoff_base_ms": 200, "start_timeout_ms": 30000},
	}
}

func (p *plane) do(method, path string, body any) (int, []byte) {
	p.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.Srv.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (p *plane) create(s map[string]any) deploy.Status {
	p.t.Helper()
	code, b := p.do("POST", "/api/v1/deployments", s)
	if code != http.StatusCreated {
		p.t.Fatalf("create: %d %s", code, b)
	}
	var st deploy.Status
	if err := json.Unmarshal(b, &st); err != nil {
		p.t.Fatal(err)
	}
	return st
}

func (p *plane) get(name string) deploy.Status {
	p.t.Helper()
	st, err := p.M.Get(name)
	if err != nil {
		p.t.Fatal(err)
	}
	return st
}

// waitFor polls cond every 20 ms until it holds or timeout passes.
func (p *plane) waitFor(what string, timeout time.Duration, cond func(deploy.Status) bool, name string) deploy.Status {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := p.M.Get(name)
		if err == nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(st, "", " ")
			p.t.Fatalf("%s: not reached within %s; last status:\n%s", what, timeout, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func statusIs(s deploy.State) func(deploy.Status) bool {
	return func(st deploy.Status) bool { return st.Status == s }
}

// runningWith is running with exactly n healthy, non-draining replicas.
func runningWith(n int) func(deploy.Status) bool {
	return func(st deploy.Status) bool {
		if st.Status != deploy.Running || len(st.ReplicasStatus) != n {
			return false
		}
		for _, r := range st.ReplicasStatus {
			if r.Status != deploy.ReplicaHealthy || r.Draining {
				return false
			}
		}
		return true
	}
}

// complete sends one short non-streaming completion and returns its status.
func complete(url, model string) (int, string) {
	body := fmt.Sprintf(`{"model":%q,"prompt":"Once upon a time","max_tokens":4,"temperature":0}`, model)
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
