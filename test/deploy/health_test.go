package deploy_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/deploy"
)

func replicaByID(st deploy.Status, id string) (deploy.ReplicaStatus, bool) {
	for _, r := range st.ReplicasStatus {
		if r.ID == id {
			return r, true
		}
	}
	return deploy.ReplicaStatus{}, false
}

// TestKillDegradedRestarted: kill -9 one of two replicas -> degraded ->
// restarted -> running, and reports the time from kill to healthy again.
func TestKillDegradedRestarted(t *testing.T) {
	p := startPlane(t, t.TempDir())
	p.create(spec(t, "killme", 2))
	st := p.waitFor("running", 60*time.Second, runningWith(2), "killme")
	victim := st.ReplicasStatus[0]
	killed := time.Now()
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// degraded is seen when the exit is noticed (before the restart is healthy).
	p.waitFor("degraded", 10*time.Second, statusIs(deploy.Degraded), "killme")
	st = p.waitFor("running again", 30*time.Second, func(s deploy.Status) bool {
		r, ok := replicaByID(s, victim.ID)
		return runningWith(2)(s) && ok && r.Restarts >= 1 && r.PID != victim.PID
	}, "killme")
	t.Logf("kill -9 to healthy again: %s (replica %s pid %d -> %d)", time.Since(killed).Round(time.Millisecond),
		victim.ID, victim.PID, mustReplica(t, st, victim.ID).PID)
	if code, body := complete(p.Srv.URL+"/d/killme", "killme-model"); code != 200 {
		t.Fatalf("after restart: %d %s", code, body)
	}
}

func mustReplica(t *testing.T, st deploy.Status, id string) deploy.ReplicaStatus {
	r, ok := replicaByID(st, id)
	if !ok {
		t.Fatalf("replica %s missing", id)
	}
	return r
}

// TestSigstopHungReplica: a SIGSTOPped replica keeps its socket but stops
// answering; after 3 failed checks it is unhealthy and restarted.
func TestSigstopHungReplica(t *testing.T) {
	p := startPlane(t, t.TempDir())
	p.create(spec(t, "hung", 2))
	st := p.waitFor("running", 60*time.Second, runningWith(2), "hung")
	victim := st.ReplicasStatus[1]
	stopped := time.Now()
	if err := syscall.Kill(victim.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(victim.PID, syscall.SIGKILL) })
	st = p.waitFor("hung replica unhealthy", 15*time.Second, func(s deploy.Status) bool {
		r, ok := replicaByID(s, victim.ID)
		return ok && r.Status == deploy.ReplicaUnhealthy
	}, "hung")
	detected := time.Since(stopped)
	r := mustReplica(t, st, victim.ID)
	if r.Restarts < 1 || r.LastError == "" {
		t.Fatalf("unhealthy replica not restarted: %+v", r)
	}
	// 3 checks 200 ms apart, each timing out after 200 ms: never before ~400 ms.
	if detected < 400*time.Millisecond {
		t.Fatalf("hung replica declared unhealthy after %s, before 3 checks could fail", detected)
	}
	st = p.waitFor("restarted", 30*time.Second, runningWith(2), "hung")
	t.Logf("SIGSTOP -> unhealthy after %s (%s) -> restarted as pid %d", detected.Round(time.Millisecond), r.LastError,
		mustReplica(t, st, victim.ID).PID)
}

// TestBackoffGrows: a replica whose engine keeps dying (the model file is
// not a GGUF) is restarted with growing delays.
func TestBackoffGrows(t *testing.T) {
	p := startPlane(t, t.TempDir())
	bad := filepath.Join(t.TempDir(), "broken.gguf")
	if err := os.WriteFile(bad, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec(t, "crashy", 1)
	s["model_path"] = bad
	s["health"] = map[string]any{"interval_ms": 200, "timeout_ms": 200, "backoff_base_ms": 100, "backoff_max_ms": 1600}
	p.create(s)
	var starts []time.Time
	lastRestarts := -1
	deadline := time.Now().Add(20 * time.Second)
	for len(starts) < 7 && time.Now().Before(deadline) {
		st := p.get("crashy")
		if len(st.ReplicasStatus) == 1 && st.ReplicasStatus[0].Restarts != lastRestarts {
			lastRestarts = st.ReplicasStatus[0].Restarts
			starts = append(starts, time.Now())
		}
		time.Sleep(5 * time.Millisecond)
	}
	st := p.get("crashy")
	if st.Status != deploy.Unhealthy {
		t.Fatalf("deployment of a crashing engine is %s, want unhealthy", st.Status)
	}
	if len(starts) < 7 {
		t.Fatalf("only %d restarts seen in 20s", len(starts))
	}
	var gaps []time.Duration
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]).Round(time.Millisecond))
	}
	t.Logf("gaps between restarts: %v (backoff 0, 100ms, 200ms, 400ms, 800ms, 1.6s cap)", gaps)
	// Lower bounds only: the sixth wait is at least 800 ms (base 100 ms doubled 3 times).
	if gaps[len(gaps)-1] < 800*time.Millisecond || gaps[len(gaps)-1] <= gaps[0] {
		t.Fatalf("backoff did not grow: %v", gaps)
	}
	if r := st.ReplicasStatus[0]; r.Status != deploy.ReplicaUnhealthy || r.LastError == "" {
		t.Fatalf("crashing replica: %+v", r)
	}
	if code, body := complete(p.Srv.URL+"/d/crashy", "crashy-model"); code != 503 {
		t.Fatalf("unhealthy deployment answered %d %s, want 503", code, body)
	}
}
