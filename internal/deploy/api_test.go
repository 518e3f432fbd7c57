package deploy

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAPI(t *testing.T) {
	m, _ := newTestManager(t, newFakeRuntime(), nil)
	srv := httptest.NewServer(Handler(m))
	defer srv.Close()
	model := modelFile(t)
	call := func(method, path, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: not JSON: %s", method, path, b)
		}
		return resp.StatusCode, v
	}
	errParam := func(v map[string]any) string {
		e, _ := v["error"].(map[string]any)
		p, _ := e["param"].(string)
		return p
	}
	spec := `{"name":"web","model_name":"m","model_path":"` + model + `","replicas":2,"cpus_per_replica":1}`
	tests := []struct {
		name, method, path, body string
		status                   int
		check                    func(map[string]any) bool
	}{
		{"create", "POST", "/api/v1/deployments", spec, 201, func(v map[string]any) bool {
			return v["name"] == "web" && v["cluster"] == "local" && v["model_class"] == "llama.cpp" && v["status"] == "deploying" &&
				v["replicas_status"] != nil && v["status_changed_at"] != nil
		}},
		{"duplicate", "POST", "/api/v1/deployments", spec, 409, nil},
		{"bad name names the field", "POST", "/api/v1/deployments", `{"name":"Web!","model_name":"x","model_path":"` + model + `"}`, 400,
			func(v map[string]any) bool { return errParam(v) == "name" }},
		{"unknown field", "POST", "/api/v1/deployments", `{"name":"x","gpus":1}`, 400,
			func(v map[string]any) bool { return errParam(v) == "gpus" }},
		{"list", "GET", "/api/v1/deployments", "", 200, func(v map[string]any) bool {
			l, _ := v["deployments"].([]any)
			return len(l) == 1
		}},
		{"get", "GET", "/api/v1/deployments/web", "", 200, func(v map[string]any) bool { return v["model_name"] == "m" }},
		{"get missing", "GET", "/api/v1/deployments/nope", "", 404, nil},
		{"scale", "PATCH", "/api/v1/deployments/web", `{"replicas":3}`, 202, func(v map[string]any) bool { return v["replicas"] == 3.0 }},
		{"bad update", "PATCH", "/api/v1/deployments/web", `{"replicas":0}`, 400,
			func(v map[string]any) bool { return errParam(v) == "replicas" }},
		{"metrics", "GET", "/api/v1/deployments/web/metrics", "", 200, func(v map[string]any) bool {
			return v["window_seconds"] == 300.0 && v["ttft"] != nil && v["error_rate_5xx"] != nil
		}},
		{"delete", "DELETE", "/api/v1/deployments/web", "", 202, func(v map[string]any) bool { return v["status"] == "deleting" }},
		{"delete missing", "DELETE", "/api/v1/deployments/nope", "", 404, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, v := call(tc.method, tc.path, tc.body)
			if code != tc.status {
				t.Fatalf("status %d, want %d: %v", code, tc.status, v)
			}
			if tc.status >= 400 {
				if _, ok := v["error"].(map[string]any); !ok {
					t.Fatalf("error without an envelope: %v", v)
				}
			}
			if tc.check != nil && !tc.check(v) {
				t.Fatalf("unexpected body: %v", v)
			}
		})
	}
}
