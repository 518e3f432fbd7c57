package deploy_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/deploy"
)

// load runs workers that send completions until stop is called.
type load struct {
	total, failed atomic.Int64
	stopCh        chan struct{}
	wg            sync.WaitGroup
	mu            sync.Mutex
	firstErrs     []string
}

func startLoad(url, model string, workers int) *load {
	l := &load{stopCh: make(chan struct{})}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stopCh:
					return
				default:
				}
				code, body := complete(url, model)
				l.total.Add(1)
				if code != 200 {
					l.failed.Add(1)
					l.mu.Lock()
					if len(l.firstErrs) < 5 {
						l.firstErrs = append(l.firstErrs, fmt.Sprintf("%d %s", code, body))
					}
					l.mu.Unlock()
				}
			}
		}()
	}
	return l
}

func (l *load) stop() { close(l.stopCh); l.wg.Wait() }

func allGeneration(gen, n int) func(deploy.Status) bool {
	return func(st deploy.Status) bool {
		if !runningWith(n)(st) {
			return false
		}
		for _, r := range st.ReplicasStatus {
			if r.Generation != gen {
				return false
			}
		}
		return true
	}
}

// TestRollingUpdateAndScaleUnderLoad: a rolling update (2 replicas), a
// scale-up to 3 and a scale-down to 1, all under continuous load, with zero
// failed requests.
func TestRollingUpdateAndScaleUnderLoad(t *testing.T) {
	p := startPlane(t, t.TempDir())
	p.create(spec(t, "roll", 2))
	first := p.waitFor("running", 60*time.Second, runningWith(2), "roll")
	l := startLoad(p.Srv.URL+"/d/roll", "roll-model", 4)
	defer func() {
		select {
		case <-l.stopCh:
		default:
			l.stop()
		}
	}()
	time.Sleep(300 * time.Millisecond) // load is flowing before the update
	code, b := p.do("PATCH", "/api/v1/deployments/roll", map[string]any{
		"engine_config": map[string]any{"ctx_size": 384, "parallel": 2}})
	if code != http.StatusAccepted {
		t.Fatalf("update: %d %s", code, b)
	}
	st := p.waitFor("rolled to generation 2", 60*time.Second, allGeneration(2, 2), "roll")
	for _, r := range st.ReplicasStatus {
		for _, old := range first.ReplicasStatus {
			if r.ID == old.ID {
				t.Fatalf("old replica %s survived the rolling update", r.ID)
			}
		}
	}
	afterRoll := l.total.Load()
	if code, b := p.do("PATCH", "/api/v1/deployments/roll", map[string]any{"replicas": 3}); code != http.StatusAccepted {
		t.Fatalf("scale up: %d %s", code, b)
	}
	p.waitFor("scaled to 3", 60*time.Second, allGeneration(2, 3), "roll")
	time.Sleep(300 * time.Millisecond)
	if code, b := p.do("PATCH", "/api/v1/deployments/roll", map[string]any{"replicas": 1}); code != http.StatusAccepted {
		t.Fatalf("scale down: %d %s", code, b)
	}
	p.waitFor("scaled to 1", 60*time.Second, allGeneration(2, 1), "roll")
	time.Sleep(300 * time.Millisecond)
	l.stop()
	t.Logf("zero-downtime: %d requests (%d during the rolling update), %d failed", l.total.Load(), afterRoll, l.failed.Load())
	if l.failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed: %v", l.failed.Load(), l.total.Load(), l.firstErrs)
	}
	if l.total.Load() < 20 {
		t.Fatalf("only %d requests ran; the load did not overlap the changes", l.total.Load())
	}
}

// TestDeleteDrainsInflightStream: delete while a stream is running; the
// stream finishes with [DONE], then the replicas stop and the deployment is
// gone (new requests 404).
func TestDeleteDrainsInflightStream(t *testing.T) {
	p := startPlane(t, t.TempDir())
	s := spec(t, "bye", 1)
	s["engine_config"] = map[string]any{"ctx_size": 2048, "parallel": 1}
	p.create(s)
	p.waitFor("running", 60*time.Second, runningWith(1), "bye")
	// top_logprobs makes the stream about 2.7 MB: more than the sockets
	// buffer, so it stays in flight while this test does not read it, however
	// fast the engine is.
	body := `{"model":"bye-model","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":1500,` +
		`"ignore_eos":true,"stream":true,"logprobs":true,"top_logprobs":20}`
	resp, err := http.Post(p.Srv.URL+"/d/bye/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "data: ") {
		t.Fatalf("no first event: %q", sc.Text())
	}
	code, b := p.do("DELETE", "/api/v1/deployments/bye", nil)
	if code != http.StatusAccepted || !strings.Contains(string(b), `"status":"deleting"`) {
		t.Fatalf("delete: %d %s", code, b)
	}
	st := p.get("bye")
	if len(st.ReplicasStatus) != 1 || !st.ReplicasStatus[0].Draining || st.ReplicasStatus[0].InFlight != 1 {
		t.Fatalf("replica should drain with the stream in flight: %+v", st.ReplicasStatus)
	}
	if code, _ := complete(p.Srv.URL+"/d/bye", "bye-model"); code != http.StatusNotFound {
		t.Fatalf("new request to a deleting deployment: %d, want 404", code)
	}
	events, done := 1, false
	for sc.Scan() {
		line := sc.Text()
		if line == "data: [DONE]" {
			done = true
		} else if strings.HasPrefix(line, "data: ") {
			events++
			if strings.Contains(line, `"error"`) {
				t.Fatalf("stream broke: %s", line)
			}
		}
	}
	if !done {
		t.Fatalf("stream ended without [DONE] after %d events", events)
	}
	select {
	case <-p.M.Done("bye"):
	case <-time.After(30 * time.Second):
		t.Fatal("deployment not gone 30s after its stream ended")
	}
	if _, err := p.M.Get("bye"); err == nil {
		t.Fatal("deleted deployment still listed")
	}
	if _, err := p.DB.GetDeployment(t.Context(), "bye"); err == nil {
		t.Fatal("deleted deployment still stored")
	}
	t.Logf("stream of %d events finished during the delete's drain", events)
}

// TestRestartRestores: a restarted control plane brings back every stored
// deployment with its spec, and it serves again.
func TestRestartRestores(t *testing.T) {
	dir := t.TempDir()
	p := startPlane(t, dir)
	p.create(spec(t, "keep", 2))
	s := spec(t, "other", 1)
	p.create(s)
	p.waitFor("running", 60*time.Second, runningWith(2), "keep")
	if code, b := p.do("PATCH", "/api/v1/deployments/keep", map[string]any{"replicas": 1}); code != http.StatusAccepted {
		t.Fatalf("scale: %d %s", code, b)
	}
	p.waitFor("scaled", 60*time.Second, runningWith(1), "keep")
	p.close()

	q := startPlane(t, dir)
	if n := len(q.M.List()); n != 2 {
		t.Fatalf("restored %d deployments, want 2", n)
	}
	st := q.waitFor("running after restart", 60*time.Second, runningWith(1), "keep")
	if st.Replicas != 1 || st.ModelName != "keep-model" {
		t.Fatalf("restored spec: %+v", st.Spec)
	}
	q.waitFor("other running after restart", 60*time.Second, runningWith(1), "other")
	if code, body := complete(q.Srv.URL, "keep-model"); code != 200 {
		t.Fatalf("restored deployment: %d %s", code, body)
	}
}
