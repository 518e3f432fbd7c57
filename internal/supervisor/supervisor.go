// Package supervisor runs one child process and keeps it healthy: it starts
// the process, waits for its health endpoint, probes it periodically, and
// restarts it with exponential backoff when it exits or stops answering
// (a hung process, not only a dead one). One goroutine, Run, owns the
// process; everyone else reads a snapshot with Status.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// State is the lifecycle state of the supervised process.
type State string

// States of a supervised process.
const (
	Starting  State = "starting"
	Healthy   State = "healthy"
	Unhealthy State = "unhealthy"
	Stopped   State = "stopped"
)

// Spec describes the process to supervise.
type Spec struct {
	Name          string
	Argv          []string
	Env           []string      // nil inherits the environment
	HealthURL     string        // GET, 200 means healthy
	StartTimeout  time.Duration // to first healthy answer; default 120s
	ProbeInterval time.Duration // default 10s
	ProbeTimeout  time.Duration // default 2s
	FailureLimit  int           // consecutive failed probes before restart; default 3
	BackoffBase   time.Duration // second restart waits this long; default 1s
	BackoffMax    time.Duration // default 5m
	StableAfter   time.Duration // healthy this long resets the backoff; default 60s
	StopTimeout   time.Duration // SIGTERM grace before SIGKILL; default 10s
	Output        io.Writer     // child's stdout and stderr; nil discards
	Logger        *slog.Logger
	OnStateChange func(Status) // called from Run's goroutine
}

// Status is a snapshot of the supervised process.
type Status struct {
	State     State
	PID       int
	Restarts  int
	Since     time.Time
	LastError string
	NextStart time.Time // when a restart is pending
}

// Supervisor supervises one process.
type Supervisor struct {
	spec   Spec
	client *http.Client

	mu     sync.Mutex
	status Status
	ready  chan struct{}
	once   sync.Once
}

// New prepares a supervisor; call Run to start it.
func New(spec Spec) *Supervisor {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&spec.StartTimeout, 120*time.Second)
	def(&spec.ProbeInterval, 10*time.Second)
	def(&spec.ProbeTimeout, 2*time.Second)
	def(&spec.BackoffBase, time.Second)
	def(&spec.BackoffMax, 5*time.Minute)
	def(&spec.StableAfter, 60*time.Second)
	def(&spec.StopTimeout, 10*time.Second)
	if spec.FailureLimit <= 0 {
		spec.FailureLimit = 3
	}
	if spec.Output == nil {
		spec.Output = io.Discard
	}
	if spec.Logger == nil {
		spec.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Supervisor{spec: spec, client: &http.Client{Timeout: spec.ProbeTimeout},
		status: Status{State: Stopped, Since: time.Now()}, ready: make(chan struct{})}
}

// Status returns the current snapshot.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

// Ready is closed the first time the process becomes healthy.
func (s *Supervisor) Ready() <-chan struct{} { return s.ready }

// Backoff returns the wait before restart number n (1-based): the first
// restart is immediate, then base, 2*base, 4*base ... capped at max.
func Backoff(n int, base, max time.Duration) time.Duration {
	if n <= 1 {
		return 0
	}
	d := base
	for i := 2; i < n; i++ {
		d *= 2
		if d >= max {
			return max
		}
	}
	return min(d, max)
}

func (s *Supervisor) set(f func(*Status)) {
	s.mu.Lock()
	prev := s.status.State
	f(&s.status)
	if s.status.State != prev {
		s.status.Since = time.Now()
	}
	st := s.status
	s.mu.Unlock()
	if st.State == Healthy {
		s.once.Do(func() { close(s.ready) })
	}
	if st.State != prev {
		s.spec.Logger.Info("engine state", "component", "supervisor", "name", s.spec.Name, "state", st.State, "pid", st.PID, "restarts", st.Restarts)
		if s.spec.OnStateChange != nil {
			s.spec.OnStateChange(st)
		}
	}
}

// Run keeps the process running until ctx is done, then stops it and returns.
func (s *Supervisor) Run(ctx context.Context) error {
	failures := 0 // consecutive unhealthy lives, for the backoff
	for {
		if failures > 0 {
			wait := Backoff(failures, s.spec.BackoffBase, s.spec.BackoffMax)
			s.set(func(st *Status) { st.NextStart = time.Now().Add(wait) })
			select {
			case <-ctx.Done():
				s.set(func(st *Status) { st.State = Stopped; st.PID = 0 })
				return nil
			case <-time.After(wait):
			}
		}
		stable, err := s.life(ctx)
		if ctx.Err() != nil {
			s.set(func(st *Status) { st.State = Stopped; st.PID = 0 })
			return nil
		}
		if stable {
			failures = 0
		}
		failures++
		msg := "exited"
		if err != nil {
			msg = err.Error()
		}
		s.spec.Logger.Warn("engine will restart", "component", "supervisor", "name", s.spec.Name, "reason", msg,
			"in", Backoff(failures, s.spec.BackoffBase, s.spec.BackoffMax).String())
		s.set(func(st *Status) { st.State = Unhealthy; st.PID = 0; st.Restarts++; st.LastError = msg })
	}
}

// life runs one process from start to exit. stable reports whether it was
// healthy for at least StableAfter.
func (s *Supervisor) life(ctx context.Context) (stable bool, err error) {
	if len(s.spec.Argv) == 0 {
		return false, errors.New("empty argv")
	}
	cmd := exec.Command(s.spec.Argv[0], s.spec.Argv[1:]...)
	cmd.Env = s.spec.Env
	cmd.Stdout, cmd.Stderr = s.spec.Output, s.spec.Output
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s.set(func(st *Status) { st.State = Starting; st.NextStart = time.Time{} })
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("start: %w", err)
	}
	s.set(func(st *Status) { st.PID = cmd.Process.Pid })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	healthySince := time.Time{}
	deadline := time.Now().Add(s.spec.StartTimeout)
	failed := 0
	interval := 50 * time.Millisecond // fast polling until first healthy
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			s.stop(cmd, exited)
			return false, ctx.Err()
		case err := <-exited:
			return stableFor(healthySince, s.spec.StableAfter), fmt.Errorf("process exited: %v", err)
		case <-timer.C:
		}
		ok := s.probe(ctx)
		switch {
		case ok:
			failed = 0
			if healthySince.IsZero() {
				healthySince = time.Now()
				interval = s.spec.ProbeInterval
			}
			s.set(func(st *Status) { st.State = Healthy })
		case healthySince.IsZero() && time.Now().After(deadline):
			s.stop(cmd, exited)
			return false, fmt.Errorf("not healthy within %s", s.spec.StartTimeout)
		case !healthySince.IsZero():
			failed++
			if failed >= s.spec.FailureLimit {
				s.stop(cmd, exited)
				return stableFor(healthySince, s.spec.StableAfter), fmt.Errorf("%d consecutive failed health checks", failed)
			}
		}
		timer.Reset(interval)
	}
}

func stableFor(since time.Time, d time.Duration) bool {
	return !since.IsZero() && time.Since(since) >= d
}

func (s *Supervisor) probe(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.spec.HealthURL, nil)
	if err != nil {
		return false
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop sends SIGTERM (and SIGCONT, in case the process is stopped) to the
// process group, then SIGKILL after StopTimeout.
func (s *Supervisor) stop(cmd *exec.Cmd, exited <-chan error) {
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	_ = syscall.Kill(pgid, syscall.SIGCONT)
	select {
	case <-exited:
	case <-time.After(s.spec.StopTimeout):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-exited
	}
}
