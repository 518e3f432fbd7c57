package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/testenv"
)

type jobView struct {
	ID             string          `json:"id"`
	Status         string          `json:"status"`
	Result         json.RawMessage `json:"result"`
	CallbackSecret string          `json:"callback_secret"`
}

func submitJob(t *testing.T, base, body string) jobView {
	t.Helper()
	resp, err := http.Post(base+"/v1/jobs", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v jobView
	if resp.StatusCode != 202 || json.Unmarshal(raw, &v) != nil || v.ID == "" {
		t.Fatalf("submit: %d %s", resp.StatusCode, raw)
	}
	return v
}

func waitJob(t *testing.T, base, id string) jobView {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/jobs/" + id)
		if err != nil {
			t.Fatal(err)
		}
		var v jobView
		_ = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if v.Status == "succeeded" || v.Status == "failed" {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %q", id, v.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAsyncJobWithCallback(t *testing.T) {
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer hook.Close()
	u, _ := url.Parse(hook.URL)
	env := testenv.GatewayEnv(t)
	env["RAY_ASYNC_QUEUE_ENABLED"] = "true"
	env["RAY_ASYNC_QUEUE_STORAGE_DIR"] = t.TempDir()
	env["RAY_ASYNC_QUEUE_POLL_INTERVAL_MS"] = "50"
	env["RAY_ASYNC_QUEUE_CALLBACK_ALLOW_PRIVATE_NETWORK"] = "true"
	env["RAY_ASYNC_QUEUE_CALLBACK_ALLOWED_HOSTS"] = u.Hostname()
	g := testenv.StartGateway(t, env)

	job := submitJob(t, g.URL, `{"endpoint":"/v1/chat/completions","callback_url":"`+hook.URL+`/done",
		"body":{"model":"stories","messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":12}}`)
	done := waitJob(t, g.URL, job.ID)
	var answer struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if done.Status != "succeeded" || json.Unmarshal(done.Result, &answer) != nil || len(answer.Choices) != 1 {
		t.Fatalf("job ended %q with result %s", done.Status, done.Result)
	}
	select {
	case r := <-got:
		b := <-bodies
		mac := hmac.New(sha256.New, []byte(job.CallbackSecret))
		mac.Write(b)
		want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
		if r.Header.Get("X-Ray-Signature") != want || !strings.Contains(string(b), job.ID) {
			t.Fatalf("callback signature %q (want %q) body %s", r.Header.Get("X-Ray-Signature"), want, b)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no callback")
	}
	status, _, _ := post(t, g.URL+"/v1/jobs", "application/json", `{"endpoint":"/v1/completions","body":{"model":"stories","prompt":"x","stream":true}}`)
	if status != 400 {
		t.Fatalf("a streaming job was accepted: %d", status)
	}
}

func TestAcceptedJobSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	env := testenv.GatewayEnv(t)
	env["RAY_ASYNC_QUEUE_ENABLED"] = "true"
	env["RAY_ASYNC_QUEUE_STORAGE_DIR"] = dir
	env["RAY_ASYNC_QUEUE_MAX_ATTEMPTS"] = "1000"
	env["RAY_ASYNC_QUEUE_POLL_INTERVAL_MS"] = "50"
	down := map[string]string{}
	for k, v := range env {
		down[k] = v
	}
	down["RAY_ENGINE_MODE"] = "external"
	down["RAY_MODEL_BASE_URL"] = "http://127.0.0.1:" + strconv.Itoa(testenv.FreePort(t)) // no engine yet
	g1 := testenv.StartGatewayAlive(t, down)
	job := submitJob(t, g1.URL, `{"endpoint":"/v1/completions","body":{"model":"stories","prompt":"Once upon a time","max_tokens":8}}`)
	_ = g1.Signal(syscall.SIGKILL) // the gateway dies with the job accepted but not done
	<-g1.Exited()

	env["RAY_PORT"] = strconv.Itoa(testenv.FreePort(t)) // the old port may be taken by now
	g2 := testenv.StartGateway(t, env)                  // same storage, now with an engine
	if v := waitJob(t, g2.URL, job.ID); v.Status != "succeeded" {
		t.Fatalf("job after restart: %q %s", v.Status, v.Result)
	}
}
