package dedupe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/raygw/raygw/internal/config"
)

// gate is a run that emits the events sent on ev and ends when end is closed
// (or its ctx is cancelled).
type gate struct {
	ev       chan string
	end      chan struct{}
	runs     atomic.Int32
	canceled atomic.Bool
}

func newGate() *gate { return &gate{ev: make(chan string), end: make(chan struct{})} }

func (g *gate) run(ctx context.Context, emit func([]byte)) (string, error) {
	n := g.runs.Add(1)
	for {
		select {
		case e := <-g.ev:
			emit([]byte(e))
		case <-g.end:
			return fmt.Sprintf("result of run %d", n), nil
		case <-ctx.Done():
			g.canceled.Store(true)
			return "", ctx.Err()
		}
	}
}

func drain(t *testing.T, w *Waiter[string]) []string {
	t.Helper()
	var got []string
	for {
		ev, err := w.Next(t.Context())
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(ev))
	}
}

func TestFollowersShareOneRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New[string](Options{})
		run := newGate()
		lead, isLeader := g.Join(t.Context(), "k", run.run)
		f1, f1Leader := g.Join(t.Context(), "k", run.run)
		other, otherLeader := g.Join(t.Context(), "other", run.run)
		if !isLeader || f1Leader || !otherLeader {
			t.Fatalf("leaders: %v %v %v", isLeader, f1Leader, otherLeader)
		}
		run.end <- struct{}{}
		run.end <- struct{}{}
		for _, w := range []*Waiter[string]{lead, f1, other} {
			defer w.Leave()
		}
		a, errA := lead.Result(t.Context())
		b, errB := f1.Result(t.Context())
		if errA != nil || errB != nil || a != b {
			t.Fatalf("leader %q %v, follower %q %v", a, errA, b, errB)
		}
		if st := g.Stats(); st.Leaders != 2 || st.Followers != 1 || run.runs.Load() != 2 {
			t.Fatalf("stats %+v, runs %d", st, run.runs.Load())
		}
		synctest.Wait()
		if g.Stats().InFlight != 0 {
			t.Fatal("finished run still in the group")
		}
		// A later identical request starts a new run.
		again, leader := g.Join(t.Context(), "k", run.run)
		defer again.Leave()
		if !leader {
			t.Fatal("joined a finished run")
		}
		close(run.end)
	})
}

func TestStreamFanOutWithLateJoiner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New[string](Options{})
		run := newGate()
		lead, _ := g.Join(t.Context(), "k", run.run)
		defer lead.Leave()
		run.ev <- "e1"
		run.ev <- "e2"
		late, _ := g.Join(t.Context(), "k", run.run)
		defer late.Leave()
		var leadGot, lateGot []string
		done := make(chan struct{})
		go func() { leadGot = drain(t, lead); close(done) }()
		go func() { lateGot = drain(t, late) }()
		run.ev <- "e3"
		close(run.end)
		<-done
		synctest.Wait()
		want := []string{"e1", "e2", "e3"}
		if diff := cmp.Diff(want, leadGot); diff != "" {
			t.Fatalf("leader events (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, lateGot); diff != "" {
			t.Fatalf("late joiner events (-want +got):\n%s", diff)
		}
	})
}

func TestDisconnectingFollowerDoesNotCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New[string](Options{})
		run := newGate()
		lead, _ := g.Join(t.Context(), "k", run.run)
		defer lead.Leave()
		fctx, disconnect := context.WithCancel(t.Context())
		f, _ := g.Join(fctx, "k", run.run)
		defer f.Leave()
		disconnect() // the follower's client goes away: it leaves by itself
		synctest.Wait()
		if _, err := f.Next(fctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("follower Next = %v", err)
		}
		if run.canceled.Load() {
			t.Fatal("a follower's disconnect cancelled the run")
		}
		close(run.end)
		if res, err := lead.Result(t.Context()); err != nil || res == "" {
			t.Fatalf("leader: %q, %v", res, err)
		}
	})
}

func TestLeaderLeavesFollowerStillServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New[string](Options{})
		run := newGate()
		lctx, disconnect := context.WithCancel(t.Context())
		lead, _ := g.Join(lctx, "k", run.run)
		f, _ := g.Join(t.Context(), "k", run.run)
		defer f.Leave()
		disconnect()
		lead.Leave()
		synctest.Wait()
		if run.canceled.Load() {
			t.Fatal("run cancelled while a follower waits")
		}
		close(run.end)
		if res, err := f.Result(t.Context()); err != nil || res == "" {
			t.Fatalf("follower: %q, %v", res, err)
		}
	})
}

func TestLastWaiterLeavingCancelsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New[string](Options{})
		run := newGate()
		a, _ := g.Join(t.Context(), "k", run.run)
		b, _ := g.Join(t.Context(), "k", run.run)
		a.Leave()
		a.Leave() // idempotent: must not count twice
		synctest.Wait()
		if run.canceled.Load() {
			t.Fatal("cancelled with one waiter left")
		}
		b.Leave()
		synctest.Wait()
		if !run.canceled.Load() {
			t.Fatal("run not cancelled after every waiter left")
		}
		if st := g.Stats(); st.Canceled != 1 || st.InFlight != 0 {
			t.Fatalf("stats = %+v", st)
		}
		c, leader := g.Join(t.Context(), "k", run.run)
		defer c.Leave()
		if !leader {
			t.Fatal("joined a cancelled run")
		}
		close(run.end)
		synctest.Wait()
	})
}

func TestPanicBecomesError(t *testing.T) {
	g := New[string](Options{})
	w, _ := g.Join(context.Background(), "k", func(context.Context, func([]byte)) (string, error) { panic("boom") })
	defer w.Leave()
	if _, err := w.Result(context.Background()); !errors.Is(err, ErrPanic) {
		t.Fatalf("err = %v, want ErrPanic", err)
	}
}

func TestNilGroupRunsAlone(t *testing.T) {
	var g *Group[int]
	if FromConfig[int](&config.Config{}) != nil {
		t.Fatal("FromConfig with dedupe off returned a group")
	}
	var runs atomic.Int32
	run := func(context.Context, func([]byte)) (int, error) { return int(runs.Add(1)), nil }
	a, la := g.Join(context.Background(), "k", run)
	b, lb := g.Join(context.Background(), "k", run)
	defer a.Leave()
	defer b.Leave()
	ra, _ := a.Result(context.Background())
	rb, _ := b.Result(context.Background())
	if !la || !lb || ra == rb || g.Stats() != (Stats{}) {
		t.Fatalf("nil group shared a run: %d %d", ra, rb)
	}
}

// BenchmarkJoinFollower is a follower joining an in-flight run and leaving.
func BenchmarkJoinFollower(b *testing.B) {
	g := New[string](Options{})
	block := make(chan struct{})
	lead, _ := g.Join(context.Background(), "k", func(ctx context.Context, _ func([]byte)) (string, error) {
		<-block
		return "", nil
	})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		w, leader := g.Join(ctx, "k", nil)
		if leader {
			b.Fatal("led")
		}
		w.Leave()
	}
	close(block)
	lead.Leave()
}

// BenchmarkLeadRun is a full uncontended run: join, run, result, leave.
func BenchmarkLeadRun(b *testing.B) {
	g := New[string](Options{})
	ctx := context.Background()
	run := func(context.Context, func([]byte)) (string, error) { return "ok", nil }
	b.ReportAllocs()
	for b.Loop() {
		w, _ := g.Join(ctx, "k", run)
		if _, err := w.Result(ctx); err != nil {
			b.Fatal(err)
		}
		w.Leave()
	}
}
