package supervisor

import (
	"context"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	base, max := time.Second, 5*time.Minute
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	for i, w := range want {
		if got := Backoff(i+1, base, max); got != w {
			t.Errorf("restart %d: %s, want %s", i+1, got, w)
		}
	}
	if got := Backoff(30, base, max); got != max {
		t.Errorf("restart 30: %s, want the cap %s", got, max)
	}
}

func TestProcessThatKeepsDyingBacksOff(t *testing.T) {
	var states []Status
	s := New(Spec{Name: "false", Argv: []string{"/bin/false"}, HealthURL: "http://127.0.0.1:1/health",
		BackoffBase: 20 * time.Millisecond, BackoffMax: 80 * time.Millisecond,
		OnStateChange: func(st Status) { states = append(states, st) }})
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	_ = s.Run(ctx)
	st := s.Status()
	if st.State != Stopped || st.Restarts < 3 {
		t.Fatalf("status %+v", st)
	}
	if st.LastError == "" {
		t.Fatal("no error recorded for the dying process")
	}
}
