package e2e

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/testenv"
)

// busyEnv is a one-slot engine with room for a long generation that keeps
// the single scheduler place busy for seconds.
func busyEnv(t *testing.T) map[string]string {
	env := testenv.GatewayEnv(t)
	for k, v := range map[string]string{
		"RAY_LLAMA_CPP_CTX_SIZE": "4096", "RAY_LLAMA_CPP_PARALLEL": "1", "RAY_MODEL_CONTEXT_WINDOW": "8192",
		"RAY_MODEL_MAX_OUTPUT_TOKENS": "4000", "RAY_SCHEDULER_CONCURRENCY": "1", "RAY_MODEL_TIMEOUT_MS": "120000",
	} {
		env[k] = v
	}
	return env
}

// startLong starts a long streaming generation, waits until it runs, and
// returns a function that ends it.
func startLong(t *testing.T, url, body string) (*http.Response, func()) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("long request: %d %s", resp.StatusCode, raw)
	}
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return resp, func() { resp.Body.Close() }
}

const longBody = `{"model":"stories","prompt":"Once upon a time","max_tokens":1900,"ignore_eos":true,"stream":true}`

func TestSchedulerEdges(t *testing.T) {
	env := busyEnv(t)
	env["RAY_SCHEDULER_MAX_QUEUE"] = "1"
	env["RAY_SCHEDULER_REQUEST_TIMEOUT_MS"] = "800"
	env["RAY_SCHEDULER_MAX_INFLIGHT_TOKENS"] = "2000"
	env["RAY_SCHEDULER_MAX_QUEUED_TOKENS"] = "2000"
	env["RAY_ADMIN_API_KEYS"] = "admin-key"
	g := testenv.StartGateway(t, env)
	_, stop := startLong(t, g.URL, longBody)
	defer stop()

	t.Run("larger than a budget is refused at once", func(t *testing.T) {
		status, e, _ := post(t, g.URL+"/v1/completions", "application/json", `{"model":"stories","prompt":"Hi","max_tokens":2040}`)
		if status != 413 || !strings.Contains(e.Error.Message, "budget") {
			t.Fatalf("status %d %q", status, e.Error.Message)
		}
	})

	var wg sync.WaitGroup
	var queuedStatus int
	var queuedCode string
	wg.Add(1)
	go func() { // takes the one queue place, then times out in the queue
		defer wg.Done()
		status, e, _ := post(t, g.URL+"/v1/completions", "application/json", `{"model":"stories","prompt":"Queued","max_tokens":8}`)
		queuedStatus = status
		if e.Error.Code != nil {
			queuedCode = *e.Error.Code
		}
	}()
	waitQueued(t, g.URL, "admin-key", 1)
	t.Run("full queue is 429 with Retry-After", func(t *testing.T) {
		status, e, h := post(t, g.URL+"/v1/completions", "application/json", `{"model":"stories","prompt":"Overflow","max_tokens":8}`)
		if status != 429 || h.Get("Retry-After") == "" || e.Error.Code == nil || *e.Error.Code != "queue_full" {
			t.Fatalf("status %d retry-after %q error %+v", status, h.Get("Retry-After"), e.Error)
		}
	})
	wg.Wait()
	if queuedStatus != 504 || queuedCode != "queue_timeout" {
		t.Fatalf("queued request: status %d code %q, want 504 queue_timeout", queuedStatus, queuedCode)
	}
}

func TestQueueDelayIsVisible(t *testing.T) {
	g := testenv.StartGateway(t, busyEnv(t))
	resp, stop := startLong(t, g.URL, `{"model":"stories","prompt":"Once upon a time","max_tokens":300,"ignore_eos":true,"stream":true}`)
	_ = resp
	start := time.Now()
	r, err := http.Post(g.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"stories","prompt":"Next","max_tokens":4}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	stop()
	q := r.Header.Get("X-Ray-Queue-Ms")
	if r.StatusCode != 200 || q == "" || q == "0" || r.Header.Get("X-Ray-Queue-Position") != "0" {
		t.Fatalf("status %d queue-ms %q position %q (waited %s)", r.StatusCode, q, r.Header.Get("X-Ray-Queue-Position"), time.Since(start))
	}
}

func get(t *testing.T, url, key, body string) (string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	return string(raw), resp.Header
}

func TestResponseCache(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_AUTH_ENABLED"] = "true"
	env["RAY_API_KEYS"] = "tenant-a,tenant-b"
	g := testenv.StartGateway(t, env)
	url := g.URL + "/v1/completions"
	det := `{"model":"stories","prompt":"Once upon a time","max_tokens":24,"temperature":0}`

	first, h1 := get(t, url, "tenant-a", det)
	second, h2 := get(t, url, "tenant-a", det)
	if h1.Get("X-Ray-Cache") != "miss" || h2.Get("X-Ray-Cache") != "hit" || first != second {
		t.Fatalf("cache headers %q then %q; bodies equal %v", h1.Get("X-Ray-Cache"), h2.Get("X-Ray-Cache"), first == second)
	}
	if _, h := get(t, url, "tenant-b", det); h.Get("X-Ray-Cache") != "miss" {
		t.Fatalf("another tenant read a cached answer: %q", h.Get("X-Ray-Cache"))
	}
	if _, h := get(t, url, "tenant-a", strings.Replace(det, `"max_tokens":24`, `"max_tokens":23`, 1)); h.Get("X-Ray-Cache") != "miss" {
		t.Fatal("a different max_tokens hit the cache")
	}
	if _, h := get(t, url, "tenant-a", strings.Replace(det, `"temperature":0`, `"temperature":0.9`, 1)); h.Get("X-Ray-Cache") != "" {
		t.Fatalf("a sampled request was cacheable: %q", h.Get("X-Ray-Cache"))
	}

	stream := strings.Replace(det, `}`, `,"stream":true}`, 1)
	s1, h3 := get(t, url, "tenant-a", stream)
	s2, h4 := get(t, url, "tenant-a", stream)
	if h3.Get("X-Ray-Cache") != "miss" || h4.Get("X-Ray-Cache") != "hit" || h4.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream cache headers %q %q %q", h3.Get("X-Ray-Cache"), h4.Get("X-Ray-Cache"), h4.Get("Content-Type"))
	}
	if s1 != s2 || !strings.HasSuffix(s2, "data: [DONE]\n\n") {
		t.Fatalf("replayed stream differs:\n%s\n---\n%s", s1, s2)
	}
}

func TestDedupeFollowerDisconnectDoesNotCancelLeader(t *testing.T) {
	g := testenv.StartGateway(t, busyEnv(t))
	body := `{"model":"stories","prompt":"Once upon a time","max_tokens":1500,"ignore_eos":true,"temperature":0,"stream":true}`
	leader, err := http.Post(g.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer leader.Body.Close()
	lr := bufio.NewReader(leader.Body)
	if _, err := lr.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	follower, err := http.Post(g.URL+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if follower.Header.Get("X-Ray-Dedupe") != "follower" {
		t.Fatalf("second identical request was not a follower: %q", follower.Header.Get("X-Ray-Dedupe"))
	}
	if _, err := bufio.NewReader(follower.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	follower.Body.Close() // the follower leaves

	events := readEvents(lr)
	if last(events) != "[DONE]" || len(events) < 1400 {
		t.Fatalf("leader got %d events ending %q after the follower left", len(events), last(events))
	}
}
