package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/testenv"
)

func TestMemoryPressureShedsWork(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_GRACEFUL_DEGRADATION_ENABLED"] = "true"
	env["RAY_DEGRADATION_MEMORY_RSS_THRESHOLD_MIB"] = "1" // the gateway is always far above 1 MiB
	g := testenv.StartGateway(t, env)
	status, e, h := post(t, g.URL+"/v1/completions", "application/json", `{"model":"stories","prompt":"Hi","max_tokens":4}`)
	if status != 503 || h.Get("Retry-After") == "" || !strings.Contains(h.Get("X-Ray-Degraded"), "shed") {
		t.Fatalf("status %d retry-after %q degraded %q: %s", status, h.Get("Retry-After"), h.Get("X-Ray-Degraded"), e.Error.Message)
	}
}

func TestQueuePressureClampsOutput(t *testing.T) {
	env := busyEnv(t)
	env["RAY_GRACEFUL_DEGRADATION_ENABLED"] = "true"
	env["RAY_DEGRADATION_QUEUE_DEPTH_THRESHOLD"] = "1"
	// Only the queue may signal pressure here, whatever the host's load.
	for _, k := range []string{"MEMORY_CGROUP_PRESSURE_RATIO", "CPU_THROTTLED_RATIO", "MEMORY_PSI_SOME_AVG10",
		"MEMORY_PSI_FULL_AVG10", "CPU_PSI_SOME_AVG10", "CPU_PSI_FULL_AVG10"} {
		env["RAY_DEGRADATION_"+k+"_THRESHOLD"] = "0"
	}
	env["RAY_DEGRADATION_MEMORY_RSS_THRESHOLD_MIB"] = "1000000"
	env["RAY_DEGRADATION_MAX_TOKENS"] = "7"
	env["RAY_DEGRADATION_MAX_PROMPT_CHARS"] = "40"
	env["RAY_ADMIN_API_KEYS"] = "admin-key"
	g := testenv.StartGateway(t, env)
	_, stop := startLong(t, g.URL, `{"model":"stories","prompt":"Once upon a time","max_tokens":1900,"ignore_eos":true,"stream":true}`)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // waits in the queue behind the long request
		defer wg.Done()
		r, err := http.Post(g.URL+"/v1/completions", "application/json", strings.NewReader(`{"model":"stories","prompt":"Queued","max_tokens":4}`))
		if err == nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
	}()
	waitQueued(t, g.URL, "admin-key", 1)
	resp, err := http.Post(g.URL+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"stories","prompt":"Once upon a time","max_tokens":100,"ignore_eos":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stop()
	wg.Wait()
	var out struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d degraded %q err %v", resp.StatusCode, resp.Header.Get("X-Ray-Degraded"), err)
	}
	if !strings.Contains(resp.Header.Get("X-Ray-Degraded"), "queue_depth") || out.Usage.CompletionTokens != 7 {
		t.Fatalf("degraded %q, completion tokens %d, want a queue clamp to 7", resp.Header.Get("X-Ray-Degraded"), out.Usage.CompletionTokens)
	}
}

func TestLearnedFamilyCap(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_ADAPTIVE_LEARNED_FAMILY_CAP_ENABLED"] = "true"
	env["RAY_ADAPTIVE_LEARNED_CAP_MIN_SAMPLES"] = "3"
	env["RAY_ADAPTIVE_MIN_OUTPUT_TOKENS"] = "8"
	env["RAY_ADAPTIVE_LEARNED_CAP_HEADROOM_TOKENS"] = "4"
	env["RAY_MODEL_MAX_OUTPUT_TOKENS"] = "200"
	g := testenv.StartGateway(t, env)
	// Answers of this family stop at the first period, far below the cap.
	body := `{"model":"stories","prompt":"Once upon a time","max_tokens":200,"stop":["."],"metadata":{"promptFamily":"one-sentence"}}`
	for i := 0; i < 3; i++ {
		if status, e, _ := post(t, g.URL+"/v1/completions", "application/json", body); status != 200 {
			t.Fatalf("sample %d: %d %s", i, status, e.Error.Message)
		}
	}
	_, _, h := post(t, g.URL+"/v1/completions", "application/json", body)
	got := h.Get("X-Ray-Output-Cap")
	if !strings.Contains(got, "learned") {
		t.Fatalf("X-Ray-Output-Cap = %q after 3 short answers, want a learned cap", got)
	}
	// Another family is untouched.
	_, _, h = post(t, g.URL+"/v1/completions", "application/json", strings.Replace(body, "one-sentence", "other", 1))
	if h.Get("X-Ray-Output-Cap") != "" {
		t.Fatalf("an unlearned family was capped: %q", h.Get("X-Ray-Output-Cap"))
	}
}

// waitQueued polls the gateway's metrics until n requests wait in its queue.
func waitQueued(t *testing.T, base, adminKey string, n int) {
	t.Helper()
	want := `raygw_scheduler_jobs{state="queued"} ` + strconv.Itoa(n)
	deadline := time.Now().Add(20 * time.Second)
	for {
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+adminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(raw), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never saw %q in /metrics", want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
