package local

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/raygw/raygw/internal/runtime"
)

// external is an endpoint raygw does not run: it is probed, never restarted.
type external struct {
	id, addr string
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	st       runtime.Status
}

func startExternal(ctx context.Context, spec runtime.ReplicaSpec, onChange func(runtime.Status)) *external {
	e := &external{id: spec.ID, addr: strings.TrimRight(spec.ExternalURL, "/"), done: make(chan struct{})}
	e.st = runtime.Status{State: runtime.Starting, Address: e.addr, Since: time.Now()}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	go func() { defer close(e.done); e.run(rctx, spec, onChange) }()
	return e
}

func (e *external) run(ctx context.Context, spec runtime.ReplicaSpec, onChange func(runtime.Status)) {
	interval, limit := spec.ProbeInterval, spec.FailureLimit
	if interval <= 0 {
		interval = 10 * time.Second
	}
	if limit <= 0 {
		limit = 3
	}
	timeout := spec.ProbeTimeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	client := &http.Client{Timeout: timeout}
	failed := 0
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			e.set(runtime.Stopped, "", onChange)
			return
		case <-t.C:
		}
		if err := probe(ctx, client, e.addr+spec.HealthPath); err != nil {
			failed++
			if failed >= limit {
				e.set(runtime.Unhealthy, err.Error(), onChange)
			}
		} else {
			failed = 0
			e.set(runtime.Healthy, "", onChange)
		}
		t.Reset(interval)
	}
}

func probe(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health check answered %d", resp.StatusCode)
	}
	return nil
}

func (e *external) set(s runtime.State, msg string, onChange func(runtime.Status)) {
	e.mu.Lock()
	changed := e.st.State != s
	e.st.State = s
	if msg != "" {
		e.st.LastError = msg
	}
	if changed {
		e.st.Since = time.Now()
	}
	st := e.st
	e.mu.Unlock()
	if changed && onChange != nil {
		onChange(st)
	}
}

func (e *external) ID() string      { return e.id }
func (e *external) Address() string { return e.addr }

func (e *external) Status() runtime.Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.st
}

func (e *external) Stop(ctx context.Context) error {
	e.cancel()
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
