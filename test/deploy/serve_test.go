package deploy_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/deploy"
	"github.com/raygw/raygw/internal/testenv"
)

const (
	adminKey  = "admin-key-0123456789abcdef"
	clientKey = "client-key-0123456789abcdef"
)

// cli runs `raygw deploy ...` against the gateway and returns its output.
func cli(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testenv.Raygw(t), append([]string{"deploy", "--url", url}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "RAYGW_ADMIN_KEY=" + adminKey}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func call(t *testing.T, method, url, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// createThroughGateway creates deployment s with `raygw deploy create -f`
// against the gateway at url and waits until it runs its replicas.
func createThroughGateway(t *testing.T, url string, s map[string]any) {
	t.Helper()
	specFile := filepath.Join(t.TempDir(), "spec.json")
	b, _ := json.Marshal(s)
	if err := os.WriteFile(specFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cli(t, url, "create", "-f", specFile); err != nil {
		t.Fatalf("deploy create: %v\n%s", err, out)
	}
	waitGateway(t, url, s["name"].(string), runningWith(s["replicas"].(int)))
}

func waitGateway(t *testing.T, url, name string, cond func(deploy.Status) bool) deploy.Status {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var st deploy.Status
	for time.Now().Before(deadline) {
		code, body := call(t, "GET", url+"/api/v1/deployments/"+name, adminKey, "")
		if code == 200 && json.Unmarshal([]byte(body), &st) == nil && cond(st) {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("deployment %s: condition not reached; last %+v", name, st)
	return st
}

// TestServeWithDeployments runs `raygw serve` (its own model plus the
// control plane), drives it with `raygw deploy`, checks access classes,
// model routing and /metrics, and restarts raygw to see the deployment
// restored from its database.
func TestServeWithDeployments(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_ADMIN_API_KEYS"] = adminKey
	env["RAY_AUTH_ENABLED"] = "true"
	env["RAY_API_KEYS"] = clientKey
	env["RAY_LLAMA_CPP_PARALLEL"] = "1"
	g := testenv.StartGateway(t, env)

	specFile := filepath.Join(t.TempDir(), "spec.json")
	spec, _ := json.Marshal(spec(t, "tales", 1))
	if err := os.WriteFile(specFile, spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cli(t, g.URL, "create", "-f", specFile); err != nil || !strings.Contains(out, `"status": "deploying"`) {
		t.Fatalf("deploy create: %v\n%s", err, out)
	}
	waitGateway(t, g.URL, "tales", runningWith(1))
	out, err := cli(t, g.URL, "list")
	if err != nil || !strings.Contains(out, "tales") || !strings.Contains(out, "running") || !strings.Contains(out, "1/1") {
		t.Fatalf("deploy list: %v\n%s", err, out)
	}

	chat := `{"model":"%s","messages":[{"role":"user","content":"Hi"}],"max_tokens":4}`
	for _, tc := range []struct {
		name, method, path, key, body string
		status                        int
		contains                      string
	}{
		{"admin API needs the admin key", "GET", "/api/v1/deployments", clientKey, "", 401, ""},
		{"admin API without key", "GET", "/api/v1/deployments", "", "", 401, ""},
		{"deployment route needs a client key", "POST", "/d/tales/v1/chat/completions", "", sprintf(chat, "tales-model"), 401, ""},
		{"deployment route", "POST", "/d/tales/v1/chat/completions", clientKey, sprintf(chat, "tales-model"), 200, `"tales-model"`},
		{"top-level route picks the deployment by model", "POST", "/v1/chat/completions", clientKey, sprintf(chat, "tales-model"), 200, `"tales-model"`},
		{"top-level route keeps the gateway's own model", "POST", "/v1/chat/completions", clientKey, sprintf(chat, "stories"), 200, `"stories"`},
		{"unknown model lists what is served", "POST", "/v1/chat/completions", clientKey, sprintf(chat, "gpt-4"), 404, `\"tales-model\"`},
		{"unknown adapter", "POST", "/d/tales/v1/chat/completions", clientKey, sprintf(chat, "tales-model:nope"), 404, "adapter_not_found"},
		{"models lists both", "GET", "/v1/models", clientKey, "", 200, `"tales-model"`},
		{"deployment models", "GET", "/d/tales/v1/models", clientKey, "", 200, `"tales-model"`},
		{"max_tokens over the max model length", "POST", "/d/tales/v1/completions", clientKey,
			`{"model":"tales-model","prompt":"` + strings.Repeat("once upon a time ", 100) + `","max_tokens":10}`, 413, "context_length_exceeded"},
		{"deployment metrics on /metrics", "GET", "/metrics", adminKey, "", 200, `raygw_deployment_requests_total{code="200",deployment="tales"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, tc.method, g.URL+tc.path, tc.key, tc.body)
			if code != tc.status || !strings.Contains(body, tc.contains) {
				t.Fatalf("%s %s: %d %s", tc.method, tc.path, code, truncate(body))
			}
		})
	}
	if out, err := cli(t, g.URL, "get", "tales", "--metrics"); err != nil || !strings.Contains(out, `"requests_per_second"`) {
		t.Fatalf("deploy get --metrics: %v\n%s", err, out)
	}
	if out, err := cli(t, g.URL, "scale", "tales", "0"); err == nil {
		t.Fatalf("scale to 0 accepted:\n%s", out)
	}

	// Restart raygw: the deployment comes back from the database.
	if err := g.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Exited():
	case <-time.After(60 * time.Second):
		t.Fatal("raygw did not stop")
	}
	// Fresh ports: another test process may have taken the old ones since.
	env["RAY_PORT"] = strconv.Itoa(testenv.FreePort(t))
	env["RAY_LLAMA_CPP_PORT"] = strconv.Itoa(testenv.FreePort(t))
	g2 := testenv.StartGateway(t, env)
	st := waitGateway(t, g2.URL, "tales", runningWith(1))
	if st.ModelName != "tales-model" {
		t.Fatalf("restored %+v", st.Spec)
	}
	if code, body := call(t, "POST", g2.URL+"/d/tales/v1/chat/completions", clientKey, sprintf(chat, "tales-model")); code != 200 {
		t.Fatalf("after restart: %d %s", code, body)
	}
	if out, err := cli(t, g2.URL, "delete", "tales"); err != nil || !strings.Contains(out, `"deleting"`) {
		t.Fatalf("deploy delete: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _ := call(t, "GET", g2.URL+"/api/v1/deployments/tales", adminKey, "")
		if code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("deleted deployment still listed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, err := cli(t, g2.URL, "get", "tales"); err == nil || !strings.Contains(out, "404") {
		t.Fatalf("get after delete: %v\n%s", err, out)
	}
}

func sprintf(f, s string) string { return strings.Replace(f, "%s", s, 1) }

func truncate(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}
