package deploy_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/deploy"
	"github.com/raygw/raygw/internal/testenv"
)

// TestGatewayModelIsADeployment: `raygw serve`'s own model (from the RAY_*
// settings) is the deployment "default" on the control plane's machinery:
// listed with its replica (the configured engine port), served at
// /d/default/v1 through the full pipeline, counted in its metrics,
// restarted after a kill -9, and refused API changes.
func TestGatewayModelIsADeployment(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_ADMIN_API_KEYS"] = adminKey
	g := testenv.StartGateway(t, env)

	st := waitGateway(t, g.URL, "default", runningWith(1))
	rep := st.ReplicasStatus[0]
	if st.Source != deploy.SourceConfig || st.ModelName != "stories" || st.ModelClass != deploy.ClassLlamaCpp ||
		!strings.HasSuffix(st.Endpoint, "/d/default/v1") || rep.Address != g.EngineURL || rep.PID <= 0 {
		t.Fatalf("gateway deployment %+v", st)
	}
	if out, err := cli(t, g.URL, "list"); err != nil || !strings.Contains(out, "default") || !strings.Contains(out, "config") {
		t.Fatalf("deploy list: %v\n%s", err, out)
	}

	chat := `{"model":"stories","messages":[{"role":"user","content":"Hi"}],"max_tokens":4}`
	for _, path := range []string{"/d/default/v1/chat/completions", "/v1/chat/completions"} {
		resp := postJSON(t, g.URL+path, chat)
		if resp.StatusCode != 200 || resp.Header.Get("X-Ray-Queue-Ms") == "" {
			t.Fatalf("%s: %d, queue header %q (the full pipeline sets it)", path, resp.StatusCode, resp.Header.Get("X-Ray-Queue-Ms"))
		}
	}
	code, body := call(t, "GET", g.URL+"/api/v1/deployments/default/metrics", adminKey, "")
	var m struct {
		Requests int64 `json:"requests"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &m) != nil || m.Requests < 2 {
		t.Fatalf("metrics of the gateway deployment: %d %s", code, truncate(body))
	}
	for _, tc := range []struct{ method, body string }{{"PATCH", `{"replicas":2}`}, {"DELETE", ""}} {
		code, body := call(t, tc.method, g.URL+"/api/v1/deployments/default", adminKey, tc.body)
		if code != http.StatusConflict || !strings.Contains(body, "RAY_") {
			t.Fatalf("%s of the gateway deployment: %d %s", tc.method, code, truncate(body))
		}
	}

	killed := time.Now()
	if err := syscall.Kill(rep.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st = waitGateway(t, g.URL, "default", func(s deploy.Status) bool {
		return len(s.ReplicasStatus) == 1 && s.ReplicasStatus[0].PID != rep.PID && runningWith(1)(s)
	})
	t.Logf("gateway engine: kill -9 to healthy again in %s (restarts %d)", time.Since(killed).Round(time.Millisecond),
		st.ReplicasStatus[0].Restarts)
	if st.ReplicasStatus[0].Restarts < 1 {
		t.Fatalf("restart not counted: %+v", st.ReplicasStatus[0])
	}
	if resp := postJSON(t, g.URL+"/v1/chat/completions", chat); resp.StatusCode != 200 {
		t.Fatalf("after the restart: %d", resp.StatusCode)
	}
	code, body = call(t, "GET", g.URL+"/metrics", adminKey, "")
	if code != 200 || !strings.Contains(body, "raygw_engine_up 1") || strings.Contains(body, "raygw_engine_restarts_total 0") {
		t.Fatalf("engine metrics after the restart:\n%s", grepLines(body, "raygw_engine_"))
	}
}

func postJSON(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestGatewayModelExternal: in external mode the gateway's deployment is
// the running engine at RAY_MODEL_BASE_URL, health-checked at /health, and
// serves through it; when the engine goes away it turns unhealthy and the
// endpoint answers 503.
func TestGatewayModelExternal(t *testing.T) {
	eng := testenv.StartLlamaServer(t)
	env := testenv.GatewayEnv(t)
	env["RAY_ADMIN_API_KEYS"] = adminKey
	env["RAY_ENGINE_MODE"] = "external"
	env["RAY_MODEL_BASE_URL"] = eng.URL
	g := testenv.StartGateway(t, env)
	st := waitGateway(t, g.URL, "default", runningWith(1))
	if st.ModelClass != deploy.ClassOpenAI || st.ReplicasStatus[0].Address != eng.URL || st.Source != deploy.SourceConfig {
		t.Fatalf("external gateway deployment %+v", st)
	}
	chat := `{"model":"stories","messages":[{"role":"user","content":"Hi"}],"max_tokens":4}`
	if resp := postJSON(t, g.URL+"/v1/chat/completions", chat); resp.StatusCode != 200 {
		t.Fatalf("through the external engine: %d", resp.StatusCode)
	}
	// The engine's per-slot context (512 over 2 slots) bounds requests, not
	// RAY_MODEL_CONTEXT_WINDOW (2048): read from its /props.
	code, body := call(t, "POST", g.URL+"/v1/completions", "",
		`{"model":"stories","prompt":"`+strings.Repeat("once upon a time ", 60)+`","max_tokens":100}`)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "of 256 tokens") {
		t.Fatalf("max_tokens over the engine's per-slot context: %d %s", code, truncate(body))
	}
	_ = eng.Cmd.Process.Kill()
	waitGateway(t, g.URL, "default", func(s deploy.Status) bool { return s.Status == deploy.Unhealthy })
	if resp := postJSON(t, g.URL+"/v1/chat/completions", chat); resp.StatusCode != http.StatusServiceUnavailable ||
		resp.Header.Get("Retry-After") == "" {
		t.Fatalf("engine gone: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}
