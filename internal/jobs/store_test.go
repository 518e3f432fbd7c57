package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestStoreRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	j := e.submit(t, "tenantA", Submission{Endpoint: EndpointCompletion, Body: []byte(`{"model":"m","prompt":"x"}`),
		CallbackURL: "http://127.0.0.1:9/hook"})
	if !validID(j.ID) || j.CallbackSecret == "" {
		t.Fatalf("bad id %q or missing secret", j.ID)
	}
	got := e.get(t, "tenantA", j.ID)
	if diff := cmp.Diff(j, got); diff != "" {
		t.Fatalf("stored job differs (-submitted +read):\n%s", diff)
	}
	if _, err := e.q.Get(context.Background(), "tenantB", j.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other tenant: %v, want ErrNotFound", err)
	}
	if _, err := e.q.Get(context.Background(), "tenantA", "job_nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("malformed id: %v, want ErrNotFound", err)
	}
}

func TestRestartLosesNoJobAndRequeuesRunning(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Config.DispatchConcurrency = 1 })
	first := e.submit(t, "t", Submission{})
	e.clk.Advance(time.Millisecond)
	second := e.submit(t, "t", Submission{})
	claimed, err := e.q.st.claim(context.Background(), e.clk.Now(), 1)
	if err != nil || len(claimed) != 1 || claimed[0].ID != first.ID {
		t.Fatalf("claim = %v, %v; want the first job", claimed, err)
	}
	if got := e.get(t, "t", first.ID); got.Status != StatusRunning || got.Attempts != 1 {
		t.Fatalf("claimed job: status %s attempts %d", got.Status, got.Attempts)
	}
	e.reopen(t) // the run died with the process

	a, b := e.get(t, "t", first.ID), e.get(t, "t", second.ID)
	if a.Status != StatusQueued || a.Attempts != 0 || a.Interruptions != 1 {
		t.Fatalf("interrupted job after restart: status %s attempts %d interruptions %d", a.Status, a.Attempts, a.Interruptions)
	}
	if b.Status != StatusQueued || b.Attempts != 0 {
		t.Fatalf("queued job after restart: status %s attempts %d", b.Status, b.Attempts)
	}
	e.opts.Config.DispatchConcurrency = 2
	e.reopen(t)
	if n := e.runDue(t); n != 2 {
		t.Fatalf("ran %d jobs after restart, want 2", n)
	}
	for _, id := range []string{first.ID, second.ID} {
		if j := e.get(t, "t", id); j.Status != StatusSucceeded || j.Attempts != 1 {
			t.Errorf("%s: status %s attempts %d, want succeeded in 1", id, j.Status, j.Attempts)
		}
	}
}

func TestJobThatKeepsDyingFails(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxInterruptions = 2 })
	j := e.submit(t, "t", Submission{CallbackURL: "http://127.0.0.1:9/hook"})
	for i := range 3 {
		if _, err := e.q.st.claim(context.Background(), e.clk.Now(), 1); err != nil {
			t.Fatal(err)
		}
		e.reopen(t)
		got := e.get(t, "t", j.ID)
		want := StatusQueued
		if i == 2 {
			want = StatusFailed
		}
		if got.Status != want {
			t.Fatalf("restart %d: status %s, want %s", i+1, got.Status, want)
		}
	}
	got := e.get(t, "t", j.ID)
	if got.ErrorCode != "job_interrupted" || got.CallbackState != CallbackPending {
		t.Fatalf("failed job: code %q callback %s", got.ErrorCode, got.CallbackState)
	}
}

func TestSecondProcessIsLockedOut(t *testing.T) {
	e := newEnv(t, nil)
	if _, err := Open(context.Background(), e.opts); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

func TestMaxJobsBound(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Config.MaxJobs = 2 })
	e.submit(t, "a", Submission{})
	e.submit(t, "b", Submission{})
	_, err := e.q.Submit(context.Background(), "a", Submission{Endpoint: EndpointChat, Body: []byte(`{}`)})
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third job: %v, want ErrQueueFull", err)
	}
	// Finished jobs count until their TTL passes.
	e.runDue(t)
	if _, err := e.q.Submit(context.Background(), "a", Submission{Endpoint: EndpointChat, Body: []byte(`{}`)}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("with two stored results: %v, want ErrQueueFull", err)
	}
	e.clk.Advance(time.Hour + time.Millisecond)
	e.submit(t, "a", Submission{})
}

func TestCompletedTTL(t *testing.T) {
	e := newEnv(t, nil)
	done := e.submit(t, "t", Submission{})
	e.runDue(t)
	pending := e.submit(t, "t", Submission{})
	canceled := e.submit(t, "t", Submission{})
	if _, err := e.q.Cancel(context.Background(), "t", canceled.ID); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(59 * time.Minute)
	if n, err := e.q.st.deleteExpired(context.Background(), e.clk.Now().Add(-e.q.ttl())); err != nil || n != 0 {
		t.Fatalf("before the TTL: deleted %d, %v", n, err)
	}
	e.clk.Advance(2 * time.Minute)
	n, err := e.q.st.deleteExpired(context.Background(), e.clk.Now().Add(-e.q.ttl()))
	if err != nil || n != 2 {
		t.Fatalf("after the TTL: deleted %d, %v; want 2", n, err)
	}
	for _, id := range []string{done.ID, canceled.ID} {
		if _, err := e.q.Get(context.Background(), "t", id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s survived the TTL: %v", id, err)
		}
	}
	if j := e.get(t, "t", pending.ID); j.Status != StatusQueued {
		t.Fatalf("a queued job must never expire: %s", j.Status)
	}
}

func TestMinFreeStorage(t *testing.T) {
	free := uint64(100 << 20)
	e := newEnv(t, func(o *Options) {
		o.Config.MinFreeStorageMiB = 256
		o.Statfs = func(dir string) (uint64, error) {
			if dir == "" {
				return 0, errors.New("no dir")
			}
			return free, nil
		}
	})
	_, err := e.q.Submit(context.Background(), "t", Submission{Endpoint: EndpointChat, Body: []byte(`{}`)})
	if !errors.Is(err, ErrInsufficientStorage) {
		t.Fatalf("100 MiB free of 256 required: %v, want ErrInsufficientStorage", err)
	}
	if c, _ := e.q.Counts(context.Background()); len(c) != 0 {
		t.Fatalf("a refused job was stored: %v", c)
	}
	free = 256 << 20
	e.submit(t, "t", Submission{})
}

func TestCancel(t *testing.T) {
	e := newEnv(t, nil)
	j := e.submit(t, "t", Submission{})
	if _, err := e.q.Cancel(context.Background(), "other", j.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("cancel by another tenant: %v", err)
	}
	got, err := e.q.Cancel(context.Background(), "t", j.ID)
	if err != nil || got.Status != StatusCanceled || got.FinishedAt.IsZero() {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	if n := e.runDue(t); n != 0 {
		t.Fatalf("a canceled job ran")
	}
	if _, err := e.q.Cancel(context.Background(), "t", j.ID); !errors.Is(err, ErrNotCancelable) {
		t.Fatalf("second cancel: %v, want ErrNotCancelable", err)
	}
}
