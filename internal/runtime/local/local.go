// Package local is the `local` runtime: each replica is a child process on
// this machine (llama-server, or vllm serve), kept alive by
// internal/supervisor, pinned to its CPUs with taskset and shown its GPUs
// through CUDA_VISIBLE_DEVICES. A replica of an external endpoint (model
// class openai) starts nothing and is only health-checked.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/raygw/raygw/internal/runtime"
	"github.com/raygw/raygw/internal/supervisor"
)

// Runtime starts replicas as local child processes.
type Runtime struct {
	// Host is the loopback address replicas listen on (default 127.0.0.1).
	Host   string
	Logger *slog.Logger
	// Taskset is the CPU pinning tool (default: taskset from PATH; pinning
	// is skipped with a warning when it is missing).
	Taskset string
	// LogOutput also sends each replica's output to Logger at debug level
	// (it is always kept, last 16 KiB, for diagnostics).
	LogOutput bool
}

var _ runtime.Runtime = (*Runtime)(nil)

// ErrNoCommand means a process replica was asked for without a command.
var ErrNoCommand = errors.New("replica spec has neither a command nor an external URL")

// Name is "local".
func (r *Runtime) Name() string { return "local" }

func (r *Runtime) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return r.Logger
}

// Start starts one replica; it keeps running until Stop or ctx ends.
func (r *Runtime) Start(ctx context.Context, spec runtime.ReplicaSpec, onChange func(runtime.Status)) (runtime.Replica, error) {
	if spec.ExternalURL != "" {
		return startExternal(ctx, spec, onChange), nil
	}
	if spec.Command == nil {
		return nil, ErrNoCommand
	}
	host, port := spec.Host, spec.Port
	if host == "" {
		host = r.Host
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if port == 0 {
		p, err := freePort(host)
		if err != nil {
			return nil, fmt.Errorf("replica %s: %w", spec.ID, err)
		}
		port = p
	}
	argv, env := spec.Command(host, port)
	argv, env = r.Wrap(argv, env, spec.CPUs, spec.GPUs)
	addr := "http://" + net.JoinHostPort(host, strconv.Itoa(port))
	log := r.logger().With("component", "runtime.local", "replica", spec.ID)
	p := &process{id: spec.ID, addr: addr, done: make(chan struct{}), tail: &tail{max: 16 << 10}}
	var out io.Writer = p.tail
	if r.LogOutput {
		out = io.MultiWriter(p.tail, outputLog{log: log})
	}
	p.sup = supervisor.New(supervisor.Spec{
		Name: spec.ID, Argv: argv, Env: env, HealthURL: addr + spec.HealthPath,
		StartTimeout: spec.StartTimeout, ProbeInterval: spec.ProbeInterval, ProbeTimeout: spec.ProbeTimeout,
		FailureLimit: spec.FailureLimit, BackoffBase: spec.BackoffBase, BackoffMax: spec.BackoffMax,
		StopTimeout: spec.StopTimeout, Output: out, Logger: log,
		OnStateChange: func(st supervisor.Status) {
			if onChange != nil {
				onChange(p.convert(st))
			}
		},
	})
	log.Info("starting replica", "argv", argv, "address", addr)
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	go func() { defer close(p.done); _ = p.sup.Run(rctx) }()
	return p, nil
}

// Wrap applies CPU pinning (taskset -c) and GPU visibility to a command.
func (r *Runtime) Wrap(argv, env []string, cpus, gpus []int) ([]string, []string) {
	if len(gpus) > 0 {
		if env == nil {
			env = os.Environ()
		}
		env = append(env, "CUDA_VISIBLE_DEVICES="+joinInts(gpus))
	}
	if len(cpus) > 0 {
		ts := r.Taskset
		if ts == "" {
			if p, err := exec.LookPath("taskset"); err == nil {
				ts = p
			}
		}
		if ts == "" {
			r.logger().Warn("taskset not found; replica not pinned to its CPUs", "component", "runtime.local")
		} else {
			argv = append([]string{ts, "-c", joinInts(cpus)}, argv...)
		}
	}
	return argv, env
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("no free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// process is a supervised child-process replica.
type process struct {
	id, addr string
	sup      *supervisor.Supervisor
	cancel   context.CancelFunc
	done     chan struct{}
	tail     *tail
}

func (p *process) ID() string      { return p.id }
func (p *process) Address() string { return p.addr }

// Output returns the last bytes the process wrote (for diagnostics).
func (p *process) Output() string { return p.tail.String() }

func (p *process) Status() runtime.Status { return p.convert(p.sup.Status()) }

func (p *process) convert(st supervisor.Status) runtime.Status {
	return runtime.Status{State: runtime.State(st.State), PID: st.PID, Address: p.addr, Restarts: st.Restarts,
		Since: st.Since, LastError: st.LastError, NextStart: st.NextStart}
}

// Stop cancels the supervisor (SIGTERM, then SIGKILL) and waits.
func (p *process) Stop(ctx context.Context) error {
	p.cancel()
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("replica %s: stop: %w", p.id, ctx.Err())
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// outputLog forwards a replica's output to the log at debug level.
type outputLog struct{ log *slog.Logger }

func (o outputLog) Write(p []byte) (int, error) {
	o.log.Debug("replica output", "text", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
