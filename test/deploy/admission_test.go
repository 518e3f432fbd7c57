package deploy_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/testenv"
)

// TestDeploymentAdmission: a llama.cpp deployment gets its own admission
// queue sized by its replicas' slots. With one replica of one slot and a
// queue of one, a running stream and a waiting request fill it: the
// deployment's metrics count the waiting one, a third request gets 429
// with Retry-After, and the waiting one runs once the stream ends, with
// its queue delay in X-Ray-Queue-Ms.
func TestDeploymentAdmission(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_ADMIN_API_KEYS"] = adminKey
	env["RAY_SCHEDULER_MAX_QUEUE"] = "1"
	env["RAY_CACHE_ENABLED"] = "false"
	env["RAY_SCHEDULER_DEDUPE_INFLIGHT"] = "false"
	g := testenv.StartGateway(t, env)
	s := spec(t, "one", 1)
	s["engine_config"] = map[string]any{"ctx_size": 2048, "parallel": 1}
	createThroughGateway(t, g.URL, s)
	url := g.URL + "/d/one/v1/chat/completions"

	// A long stream (2.7 MB with top_logprobs) holds the only slot while
	// this test does not read it.
	long := `{"model":"one-model","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":1500,` +
		`"ignore_eos":true,"stream":true,"logprobs":true,"top_logprobs":20}`
	resp, err := http.Post(url, "application/json", strings.NewReader(long))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() {
		t.Fatal("no first event")
	}
	waiting := make(chan *http.Response, 1)
	go func() {
		r, err := http.Post(url, "application/json", strings.NewReader(
			`{"model":"one-model","messages":[{"role":"user","content":"Hi"}],"max_tokens":4}`))
		if err != nil {
			t.Error(err)
			close(waiting)
			return
		}
		r.Body.Close()
		waiting <- r
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := call(t, "GET", g.URL+"/api/v1/deployments/one/metrics", adminKey, "")
		var m struct {
			Queued int `json:"queued"`
		}
		if code == 200 && json.Unmarshal([]byte(body), &m) == nil && m.Queued == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second request never showed as queued: %d %s", code, truncate(body))
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, _, h := postWithHeaders(t, url, `{"model":"one-model","messages":[{"role":"user","content":"Hello"}],"max_tokens":4}`)
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("third request with the queue full: %d, Retry-After %q", code, h.Get("Retry-After"))
	}
	for sc.Scan() { // let the stream finish
	}
	r := <-waiting
	if r == nil || r.StatusCode != 200 || r.Header.Get("X-Ray-Queue-Ms") == "" || r.Header.Get("X-Ray-Queue-Ms") == "0" {
		t.Fatalf("queued request: %+v", r)
	}
	t.Logf("queued request waited %s ms", r.Header.Get("X-Ray-Queue-Ms"))
}

func postWithHeaders(t *testing.T, url, body string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
	return resp.StatusCode, b.String(), resp.Header
}
