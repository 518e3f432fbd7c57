package deploy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/deploy"
)

// TestCreateRunningAndLeastPending creates a 3-replica deployment, waits
// for running, then shows least-pending spreading concurrent load.
func TestCreateRunningAndLeastPending(t *testing.T) {
	p := startPlane(t, t.TempDir())
	st := p.create(spec(t, "spread", 3))
	if st.Status != deploy.Deploying {
		t.Fatalf("new deployment is %s, want deploying", st.Status)
	}
	st = p.waitFor("running", 60*time.Second, runningWith(3), "spread")
	if st.Endpoint == "" {
		t.Fatal("running deployment has no endpoint")
	}
	for _, r := range st.ReplicasStatus {
		if r.PID == 0 || !strings.HasPrefix(r.Address, "http://127.0.0.1:") {
			t.Fatalf("replica %+v lacks pid/address", r)
		}
	}
	// 6 workers x 5 requests; each request holds a replica while it runs.
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				if code, body := complete(p.Srv.URL+"/d/spread", "spread-model"); code != 200 {
					mu.Lock()
					failed++
					mu.Unlock()
					t.Logf("request failed: %d %s", code, body)
				}
			}
		}()
	}
	wg.Wait()
	if failed > 0 {
		t.Fatalf("%d requests failed", failed)
	}
	st = p.get("spread")
	var counts []int64
	for _, r := range st.ReplicasStatus {
		counts = append(counts, r.Requests)
		if r.Requests == 0 {
			t.Errorf("replica %s served no request; least-pending should spread 6 concurrent clients", r.ID)
		}
	}
	t.Logf("per-replica request counts (30 requests, 6 concurrent clients): %v", counts)
	code, b := p.do("GET", "/api/v1/deployments/spread/metrics", nil)
	var m deploy.Metrics
	if code != 200 || json.Unmarshal(b, &m) != nil || m.Requests != 30 || m.E2E.P50MS <= 0 {
		t.Fatalf("metrics: %d %s", code, b)
	}
	t.Logf("metrics: %s", b)
	// The top-level route picks the deployment by model; unknown models 404 with the list.
	if code, body := complete(p.Srv.URL, "spread-model"); code != 200 {
		t.Fatalf("/v1 by model: %d %s", code, body)
	}
	code, body := complete(p.Srv.URL, "nope")
	if code != http.StatusNotFound || !strings.Contains(body, "model_not_found") || !strings.Contains(body, "spread-model") {
		t.Fatalf("unknown model: %d %s", code, body)
	}
}
