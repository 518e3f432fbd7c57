package admission

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/raygw/raygw/internal/config"
)

type result struct {
	t   *Ticket
	err error
}

// start runs Acquire in a goroutine and waits until it has either returned or
// blocked in the queue.
func start(s *Scheduler, ctx context.Context, j Job) chan result {
	ch := make(chan result, 1)
	go func() {
		t, err := s.Acquire(ctx, j)
		ch <- result{t, err}
	}()
	synctest.Wait()
	return ch
}

func ready(ch chan result) (result, bool) {
	select {
	case r := <-ch:
		return r, true
	default:
		return result{}, false
	}
}

func mustTicket(t *testing.T, ch chan result) *Ticket {
	t.Helper()
	r, ok := ready(ch)
	if !ok {
		t.Fatal("job still waiting, want admitted")
	}
	if r.err != nil {
		t.Fatalf("Acquire: %v", r.err)
	}
	return r.t
}

func base() Options {
	return Options{Concurrency: 1, MaxQueue: 4, MaxQueuedTokens: 1000, MaxInflightTokens: 500,
		RequestTimeout: 10 * time.Second, ShortJobMaxTokens: 96, AffinityLookahead: 4, MaxPassOvers: 3}
}

func TestFromConfig(t *testing.T) {
	cfg := &config.Config{}
	cfg.Scheduler = config.Scheduler{Concurrency: 2, MaxQueue: 40, MaxQueuedTokens: 18000, MaxInflightTokens: 2048,
		RequestTimeoutMS: 32000, BatchWindowMS: 5, AffinityLookahead: 12, ShortJobMaxTokens: 96}
	cfg.LlamaCpp.Parallel = 2
	s := FromConfig(cfg, nil)
	o := s.opts
	if o.Concurrency != 2 || o.MaxQueue != 40 || o.RequestTimeout != 32*time.Second ||
		o.BatchWindow != 5*time.Millisecond || o.Slots != 2 || o.MaxLongWait != 8*time.Second {
		t.Fatalf("options = %+v", o)
	}
}

func TestTooLargeRefusedAtOnce(t *testing.T) {
	s := New(base())
	for _, j := range []Job{{PromptTokens: 400, OutputCap: 101}, {PromptTokens: 2000}} {
		_, err := s.Acquire(context.Background(), j)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("job %+v: err = %v, want ErrTooLarge", j, err)
		}
	}
	if st := s.Stats(); st.RejectedTooLarge != 2 || st.Queued != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestImmediateAdmitAndRelease(t *testing.T) {
	s := New(Options{Concurrency: 1, MaxQueue: 1, Slots: 2})
	tk, err := s.Acquire(context.Background(), Job{PromptTokens: 10, OutputCap: 10})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Slot != 0 || tk.Position != 0 || tk.QueueDelay != 0 {
		t.Fatalf("ticket = %+v", tk)
	}
	tk.Release()
	tk.Release() // idempotent
	if st := s.Stats(); st.Running != 0 || st.InflightTokens != 0 || st.Admitted != 1 {
		t.Fatalf("stats after release = %+v", st)
	}
}

func TestQueueFull(t *testing.T) {
	cases := []struct {
		name string
		fill []Job
		next Job
	}{
		{"by count", []Job{{OutputCap: 10}, {OutputCap: 10}}, Job{OutputCap: 10}},
		{"by queued tokens", []Job{{PromptTokens: 300, OutputCap: 100}}, Job{PromptTokens: 200, OutputCap: 150}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := base()
				o.MaxQueue, o.MaxQueuedTokens = 2, 700
				s := New(o)
				running := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
				for _, j := range tc.fill {
					if _, ok := ready(start(s, t.Context(), j)); ok {
						t.Fatal("filler was not queued")
					}
				}
				_, err := s.Acquire(t.Context(), tc.next)
				if !errors.Is(err, ErrQueueFull) {
					t.Fatalf("err = %v, want ErrQueueFull", err)
				}
				if sec := RetryAfterSeconds(err); sec < 1 || sec > 10 {
					t.Fatalf("Retry-After = %d, want 1..10", sec)
				}
				running.Release()
				synctest.Wait()
			})
		})
	}
}

func TestRetryAfterSecondsWithoutSuggestion(t *testing.T) {
	if got := RetryAfterSeconds(ErrQueueTimeout); got != 0 {
		t.Fatalf("got %d", got)
	}
	if got := RetryAfterSeconds(fmt.Errorf("x: %w", &RejectError{Err: ErrQueueFull, RetryAfter: 2500 * time.Millisecond})); got != 3 {
		t.Fatalf("got %d, want 3", got)
	}
}

func TestTimeoutInQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(base())
		running := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
		waiting := start(s, t.Context(), Job{PromptTokens: 50, OutputCap: 50})
		time.Sleep(10*time.Second - time.Millisecond) // fake time inside the bubble
		synctest.Wait()
		if _, ok := ready(waiting); ok {
			t.Fatal("left the queue before the timeout")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		r, ok := ready(waiting)
		if !ok || !errors.Is(r.err, ErrQueueTimeout) {
			t.Fatalf("got %+v, want ErrQueueTimeout", r)
		}
		if st := s.Stats(); st.Queued != 0 || st.QueuedTokens != 0 || st.TimedOut != 1 {
			t.Fatalf("stats = %+v", st)
		}
		// It is never run: the next job gets the freed place.
		running.Release()
		next := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
		if st := s.Stats(); st.Admitted != 2 {
			t.Fatalf("admitted = %d, want 2", st.Admitted)
		}
		next.Release()
	})
}

func TestCanceledCallerLeavesQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(base())
		running := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
		ctx, cancel := context.WithCancel(t.Context())
		waiting := start(s, ctx, Job{PromptTokens: 300, OutputCap: 100})
		if st := s.Stats(); st.QueuedTokens != 400 {
			t.Fatalf("queued tokens = %d", st.QueuedTokens)
		}
		cancel()
		synctest.Wait()
		r, ok := ready(waiting)
		if !ok || !errors.Is(r.err, ErrCanceled) || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("got %+v, want ErrCanceled wrapping context.Canceled", r)
		}
		if st := s.Stats(); st.QueuedTokens != 0 || st.Queued != 0 || st.Canceled != 1 {
			t.Fatalf("budget not freed: %+v", st)
		}
		running.Release()
	})
}

func TestInflightBudgetHoldsSecondJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := base()
		o.Concurrency = 2
		s := New(o)
		a := mustTicket(t, start(s, t.Context(), Job{PromptTokens: 200, OutputCap: 200}))
		b := start(s, t.Context(), Job{PromptTokens: 100, OutputCap: 150})
		if _, ok := ready(b); ok {
			t.Fatal("second job ran over the in-flight budget")
		}
		a.Release()
		synctest.Wait()
		mustTicket(t, b).Release()
	})
}

func TestShortJobsGoFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(base())
		running := mustTicket(t, start(s, t.Context(), Job{OutputCap: 10}))
		long := start(s, t.Context(), Job{OutputCap: 200})
		short := start(s, t.Context(), Job{OutputCap: 50})
		running.Release()
		synctest.Wait()
		tk := mustTicket(t, short)
		if tk.Position != 1 {
			t.Fatalf("short position = %d, want 1", tk.Position)
		}
		if _, ok := ready(long); ok {
			t.Fatal("long job ran before the short one")
		}
		tk.Release()
		synctest.Wait()
		mustTicket(t, long).Release()
	})
}
