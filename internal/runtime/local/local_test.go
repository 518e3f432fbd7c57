package local

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/runtime"
)

func TestWrapPinsCPUsAndShowsGPUs(t *testing.T) {
	r := &Runtime{Taskset: "/usr/bin/taskset"}
	argv, env := r.Wrap([]string{"llama-server", "--threads", "2"}, []string{"A=1"}, []int{2, 3}, []int{1})
	if want := []string{"/usr/bin/taskset", "-c", "2,3", "llama-server", "--threads", "2"}; !slices.Equal(argv, want) {
		t.Fatalf("argv %v", argv)
	}
	if !slices.Equal(env, []string{"A=1", "CUDA_VISIBLE_DEVICES=1"}) {
		t.Fatalf("env %v", env)
	}
	argv, env = r.Wrap([]string{"x"}, nil, nil, nil)
	if !slices.Equal(argv, []string{"x"}) || env != nil {
		t.Fatalf("no resources must change nothing: %v %v", argv, env)
	}
}

// states records state changes.
type states struct {
	mu  sync.Mutex
	all []runtime.Status
}

func (s *states) add(st runtime.Status) {
	s.mu.Lock()
	s.all = append(s.all, st)
	s.mu.Unlock()
}

func (s *states) count(st runtime.State) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, x := range s.all {
		if x.State == st {
			n++
		}
	}
	return n
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProcessReplicaRestartsAndStops: a process that exits at once is
// restarted by the supervisor with backoff until it is stopped.
func TestProcessReplicaRestartsAndStops(t *testing.T) {
	script := filepath.Join(t.TempDir(), "dies.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var st states
	r := &Runtime{}
	rep, err := r.Start(context.Background(), runtime.ReplicaSpec{ID: "x-1", HealthPath: "/health",
		Command:     func(host string, port int) ([]string, []string) { return []string{script}, nil },
		BackoffBase: 20 * time.Millisecond, BackoffMax: 40 * time.Millisecond}, st.add)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Address(), "http://127.0.0.1:") {
		t.Fatalf("address %s", rep.Address())
	}
	waitUntil(t, "three restarts", func() bool { return rep.Status().Restarts >= 3 })
	if st.count(runtime.Unhealthy) < 3 || !strings.Contains(rep.Status().LastError, "exit status 3") {
		t.Fatalf("states %v last error %q", st.all, rep.Status().LastError)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rep.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s := rep.Status().State; s != runtime.Stopped {
		t.Fatalf("after stop: %s", s)
	}
}

func TestExternalReplicaIsProbed(t *testing.T) {
	var fail atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() || r.URL.Path != "/v1/models" {
			w.WriteHeader(500)
			return
		}
		_, _ = w.Write([]byte(`{"data":[]}`))
	}))
	defer srv.Close()
	var st states
	rep, err := (&Runtime{}).Start(context.Background(), runtime.ReplicaSpec{ID: "ext", ExternalURL: srv.URL + "/v1/",
		HealthPath: "/models", ProbeInterval: 10 * time.Millisecond, FailureLimit: 2}, st.add)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Stop(context.Background())
	if rep.Address() != srv.URL+"/v1" {
		t.Fatalf("address %s", rep.Address())
	}
	waitUntil(t, "healthy", func() bool { return rep.Status().State == runtime.Healthy })
	fail.Store(true)
	waitUntil(t, "unhealthy after 2 failures", func() bool { return rep.Status().State == runtime.Unhealthy })
	fail.Store(false)
	waitUntil(t, "healthy again", func() bool { return rep.Status().State == runtime.Healthy })
	if st.count(runtime.Healthy) != 2 || st.count(runtime.Unhealthy) != 1 {
		t.Fatalf("transitions %v", st.all)
	}
}

// TestProcessReplicaListensWhereTold: a spec with a host and port gets
// exactly that address and command line (the gateway's own engine keeps
// the port its settings give it).
func TestProcessReplicaListensWhereTold(t *testing.T) {
	script := filepath.Join(t.TempDir(), "dies.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 8)
	rep, err := (&Runtime{}).Start(context.Background(), runtime.ReplicaSpec{ID: "fixed", HealthPath: "/health",
		Host: "127.0.0.1", Port: 48123,
		Command: func(host string, port int) ([]string, []string) {
			select {
			case got <- fmt.Sprintf("%s:%d", host, port):
			default:
			}
			return []string{script}, nil
		},
		BackoffBase: 20 * time.Millisecond, BackoffMax: 40 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Stop(context.Background())
	if rep.Address() != "http://127.0.0.1:48123" {
		t.Fatalf("address %s", rep.Address())
	}
	if a := <-got; a != "127.0.0.1:48123" {
		t.Fatalf("command rendered for %s", a)
	}
}
