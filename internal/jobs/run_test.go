package jobs

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/openai"
)

func TestDispatcherRetries(t *testing.T) {
	unavailable := reply{status: 503, body: `{"error":{"message":"engine busy","type":"server_error","code":"engine_unavailable"}}`}
	ok := reply{status: 200, body: `{"object":"chat.completion","id":"c1"}`}
	bad := reply{status: 400, body: `{"error":{"message":"messages: required","type":"invalid_request_error","param":"messages","code":null}}`}
	tests := []struct {
		name         string
		script       []reply
		rounds       int
		wantStatus   Status
		wantAttempts int
		wantCode     string
	}{
		{"503 then 200 succeeds in 2", []reply{unavailable, ok}, 2, StatusSucceeded, 2, ""},
		{"400 fails at once", []reply{bad}, 1, StatusFailed, 1, ""},
		{"429 is retried", []reply{{status: 429, body: `{}`}, ok}, 2, StatusSucceeded, 2, ""},
		{"transport error is retried", []reply{{err: io.ErrUnexpectedEOF}, ok}, 2, StatusSucceeded, 2, ""},
		{"503 until max attempts", []reply{unavailable}, 5, StatusFailed, 3, ""},
		{"client error from data path is final", []reply{{err: openai.BadRequest("model", "unknown model")}}, 1, StatusFailed, 1, ""},
		{"2xx that is not JSON fails", []reply{{status: 200, body: "oops"}}, 1, StatusFailed, 1, "invalid_result"},
		{"hidden internal error", []reply{{err: errors.New("dial tcp 10.0.0.3:8081: refused")}}, 5, StatusFailed, 3, "job_execution_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.exec.script = tt.script
			j := e.submit(t, "t", Submission{})
			for range tt.rounds {
				e.runDue(t)
				e.clk.Advance(2 * time.Minute) // past any backoff
			}
			got := e.get(t, "t", j.ID)
			if got.Status != tt.wantStatus || got.Attempts != tt.wantAttempts || e.exec.Calls() != tt.wantAttempts {
				t.Fatalf("status %s attempts %d calls %d; want %s in %d", got.Status, got.Attempts, e.exec.Calls(),
					tt.wantStatus, tt.wantAttempts)
			}
			if tt.wantCode != "" && got.ErrorCode != tt.wantCode {
				t.Fatalf("error code %q, want %q", got.ErrorCode, tt.wantCode)
			}
			v := got.View(true)
			if (v.Result != nil) != (tt.wantStatus == StatusSucceeded) || (v.Error != nil) != (tt.wantStatus == StatusFailed) {
				t.Fatalf("view: result %s error %+v", v.Result, v.Error)
			}
			if v.Error != nil && (v.Error.Message == "" || strings.Contains(v.Error.Message, "10.0.0.3")) {
				t.Fatalf("client-facing error %q is empty or leaks internals", v.Error.Message)
			}
		})
	}
}

func TestRetryWaitsForBackoff(t *testing.T) {
	e := newEnv(t, nil)
	e.exec.script = []reply{{status: 502, body: `{}`}, {status: 200, body: `{}`}}
	j := e.submit(t, "t", Submission{})
	e.runDue(t)
	got := e.get(t, "t", j.ID)
	if got.Status != StatusQueued || !got.NextRunAt.Equal(e.clk.Now().Add(time.Second)) {
		t.Fatalf("after a 502: status %s next run %v (now %v)", got.Status, got.NextRunAt, e.clk.Now())
	}
	if n := e.runDue(t); n != 0 {
		t.Fatal("a job ran before its backoff ended")
	}
	e.clk.Advance(time.Second)
	if n := e.runDue(t); n != 1 {
		t.Fatalf("ran %d after the backoff, want 1", n)
	}
}

func TestBackoff(t *testing.T) {
	b := expBackoff(time.Second, 2, time.Minute)
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 7: time.Minute, 100: time.Minute} {
		if got := b(n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestExecutorPanicIsAFailure(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Config.MaxAttempts = 1; o.Executor = panicExec{} })
	j := e.submit(t, "t", Submission{})
	e.runDue(t)
	if got := e.get(t, "t", j.ID); got.Status != StatusFailed {
		t.Fatalf("status %s after a panic, want failed", got.Status)
	}
}

type panicExec struct{}

func (panicExec) Execute(context.Context, string, string, []byte) (int, []byte, error) { panic("boom") }

// TestRunLoop drives the real Run loop: a submit wakes it, the job runs
// with the tenant and endpoint it was submitted with, and stopping leaves
// no goroutine behind (goleak in TestMain).
func TestRunLoop(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Now = time.Now; o.Config.PollIntervalMS = 3_600_000 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.q.Run(ctx) }()
	j := e.submit(t, "tenantA", Submission{Endpoint: EndpointCompletion, Body: []byte(`{"model":"m","prompt":"x"}`)})
	waitFor(t, "the job to succeed", func() bool { return e.get(t, "tenantA", j.ID).Status == StatusSucceeded })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if e.exec.calls[0] != "tenantA "+EndpointCompletion {
		t.Fatalf("executor called with %q", e.exec.calls[0])
	}
}

// TestGracefulStop: a running job that outlives the drain timeout is
// cancelled and queued again without losing an attempt; queued jobs stay
// queued.
func TestGracefulStop(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.Now = time.Now
		o.DrainTimeout = 50 * time.Millisecond
		o.Config.DispatchConcurrency = 1
	})
	e.exec.block = make(chan struct{}) // never closed: the run only ends by cancellation
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	running := e.submit(t, "t", Submission{})
	go func() { done <- e.q.Run(ctx) }()
	waitFor(t, "the job to start", func() bool { return e.exec.Calls() == 1 })
	waiting := e.submit(t, "t", Submission{})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	r, w := e.get(t, "t", running.ID), e.get(t, "t", waiting.ID)
	if r.Status != StatusQueued || r.Attempts != 0 || r.Interruptions != 1 {
		t.Fatalf("interrupted job: status %s attempts %d interruptions %d", r.Status, r.Attempts, r.Interruptions)
	}
	if w.Status != StatusQueued || e.exec.Calls() != 1 {
		t.Fatalf("waiting job: status %s, executor calls %d", w.Status, e.exec.Calls())
	}
}

func TestRetryableStatuses(t *testing.T) {
	for status, want := range map[int]bool{200: false, 400: false, 404: false, 408: false, 429: true, 500: true, 503: true, 504: true} {
		if got := retryable(status); got != want {
			t.Errorf("retryable(%d) = %v, want %v", status, got, want)
		}
	}
}
