package jobs

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/jobs/callback"
)

// receiver is a webhook endpoint answering from a script of statuses (the
// last repeats) and keeping what it received.
type receiver struct {
	mu       sync.Mutex
	statuses []int
	bodies   [][]byte
	sigs     []string
	srv      *httptest.Server
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, b)
		r.sigs = append(r.sigs, req.Header.Get(callback.SignatureHeader))
		st := r.statuses[0]
		if len(r.statuses) > 1 {
			r.statuses = r.statuses[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(st)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

func TestCallbackRetriesAfter500s(t *testing.T) {
	e := newEnv(t, nil)
	rcv := newReceiver(t, 500, 503, 200)
	j := e.submit(t, "t", Submission{CallbackURL: rcv.srv.URL + "/hook"})
	if n := e.deliverDue(t); n != 0 {
		t.Fatal("a callback was sent before the job finished")
	}
	e.runDue(t)
	for i := range 3 {
		if n := e.deliverDue(t); n != 1 {
			t.Fatalf("round %d delivered %d, want 1", i, n)
		}
		got := e.get(t, "t", j.ID)
		if i < 2 && (got.CallbackState != CallbackPending || got.CallbackLastError == "") {
			t.Fatalf("after a 5xx: state %s last error %q", got.CallbackState, got.CallbackLastError)
		}
		if n := e.deliverDue(t); n != 0 {
			t.Fatal("a retry was sent before its backoff")
		}
		e.clk.Advance(10 * time.Minute)
	}
	got := e.get(t, "t", j.ID)
	if got.CallbackState != CallbackDelivered || got.CallbackAttempts != 3 || rcv.count() != 3 {
		t.Fatalf("state %s attempts %d received %d; want delivered after 3", got.CallbackState, got.CallbackAttempts, rcv.count())
	}
	var body View
	if err := json.Unmarshal(rcv.bodies[2], &body); err != nil {
		t.Fatal(err)
	}
	if body.ID != j.ID || body.Status != StatusSucceeded || len(body.Result) == 0 || body.Callback != nil {
		t.Fatalf("callback body %s", rcv.bodies[2])
	}
	if !callback.Verify(j.CallbackSecret, rcv.bodies[2], rcv.sigs[2]) {
		t.Fatalf("signature %q does not verify with the job's secret", rcv.sigs[2])
	}
}

func TestCallbackGivesUp(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		attempts int
	}{
		{"5xx until max attempts", []int{500}, 3},
		{"4xx is final", []int{404}, 1},
		{"redirect is final", []int{302}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			rcv := newReceiver(t, tt.statuses...)
			j := e.submit(t, "t", Submission{CallbackURL: rcv.srv.URL})
			e.runDue(t)
			for range 6 {
				e.deliverDue(t)
				e.clk.Advance(time.Hour)
			}
			got := e.get(t, "t", j.ID)
			if got.CallbackState != CallbackFailed || got.CallbackAttempts != tt.attempts || rcv.count() != tt.attempts {
				t.Fatalf("state %s attempts %d received %d; want failed after %d", got.CallbackState,
					got.CallbackAttempts, rcv.count(), tt.attempts)
			}
		})
	}
}

func TestCallbackSurvivesRestart(t *testing.T) {
	e := newEnv(t, nil)
	rcv := newReceiver(t, 500, 200)
	j := e.submit(t, "t", Submission{CallbackURL: rcv.srv.URL})
	e.runDue(t)
	e.deliverDue(t) // 500: pending with backoff
	e.reopen(t)
	got := e.get(t, "t", j.ID)
	if got.CallbackState != CallbackPending || got.CallbackAttempts != 1 {
		t.Fatalf("after restart: state %s attempts %d", got.CallbackState, got.CallbackAttempts)
	}
	if n := e.deliverDue(t); n != 0 {
		t.Fatal("a restart skipped the callback backoff")
	}
	// A delivery cut by a crash (claimed, never recorded) is due again at
	// the next start, not only when its lease ends.
	e.clk.Advance(time.Hour)
	if _, err := e.q.st.claimCallbacks(context.Background(), e.clk.Now(), e.q.callbackLease(), 1); err != nil {
		t.Fatal(err)
	}
	if n := e.deliverDue(t); n != 0 {
		t.Fatal("a leased delivery was claimed twice")
	}
	e.reopen(t)
	if n := e.deliverDue(t); n != 1 {
		t.Fatalf("after a crash mid-delivery %d callbacks were due, want 1", n)
	}
	got = e.get(t, "t", j.ID)
	if got.CallbackState != CallbackDelivered || got.CallbackAttempts != 3 || rcv.count() != 2 {
		t.Fatalf("state %s attempts %d received %d", got.CallbackState, got.CallbackAttempts, rcv.count())
	}
}

func TestCallbackCheckedAgainAtDelivery(t *testing.T) {
	e := newEnv(t, nil)
	rcv := newReceiver(t, 200)
	j := e.submit(t, "t", Submission{CallbackURL: rcv.srv.URL})
	e.runDue(t)
	e.opts.Config.CallbackAllowedHosts = []string{"callback.example"} // the operator narrowed the list
	e.reopen(t)
	e.deliverDue(t)
	if got := e.get(t, "t", j.ID); got.CallbackState != CallbackFailed || rcv.count() != 0 {
		t.Fatalf("state %s received %d; a host no longer allowed must not be called", got.CallbackState, rcv.count())
	}
}

func TestNoCallbackWithoutURL(t *testing.T) {
	e := newEnv(t, nil)
	j := e.submit(t, "t", Submission{})
	e.runDue(t)
	if got := e.get(t, "t", j.ID); got.CallbackState != CallbackNone || got.View(true).Callback != nil {
		t.Fatalf("callback state %s for a job without URL", got.CallbackState)
	}
}
