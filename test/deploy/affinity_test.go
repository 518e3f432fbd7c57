package deploy_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/testenv"
)

// TestPrefixAffinityAcrossReplicas: through `raygw serve`, requests of a
// deployment with two replicas that share a system prompt go back to the
// replica that served it first, where llama-server reuses the cached
// prompt; two families, sent A A B B A A B B (out of step with the
// least-pending rotation), each stay on one replica.
func TestPrefixAffinityAcrossReplicas(t *testing.T) {
	env := testenv.GatewayEnv(t)
	env["RAY_ADMIN_API_KEYS"] = adminKey
	g := testenv.StartGateway(t, env)
	s := spec(t, "pair", 2)
	s["engine_config"] = map[string]any{"ctx_size": 1024, "parallel": 1}
	createThroughGateway(t, g.URL, s)

	families := map[string]string{
		"A": strings.Repeat("Once upon a time there was a little girl named Lily who loved to play in the park. ", 3),
		"B": strings.Repeat("The big brown dog ran to the river and jumped into the cold water with a splash. ", 3),
	}
	served := map[string]map[string]int{"A": {}, "B": {}}
	cached := map[string]int{}
	for i, fam := range []string{"A", "A", "B", "B", "A", "A", "B", "B"} {
		before := replicaRequests(t, g.URL)
		body, _ := json.Marshal(map[string]any{"model": "pair-model", "max_tokens": 4, "temperature": 0,
			"messages": []map[string]string{{"role": "system", "content": families[fam]},
				{"role": "user", "content": fmt.Sprintf("Tell me story number %d.", i)}}})
		code, resp := call(t, "POST", g.URL+"/d/pair/v1/chat/completions", "", string(body))
		var out struct {
			Usage struct {
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(resp), &out) != nil {
			t.Fatalf("request %d: %d %s", i, code, truncate(resp))
		}
		after := replicaRequests(t, g.URL)
		for id, n := range after {
			if n > before[id] {
				served[fam][id]++
			}
		}
		cached[fam] += out.Usage.Details.Cached
	}
	t.Logf("replicas per family: %v; cached prompt tokens per family: %v", served, cached)
	for fam, by := range served {
		if len(by) != 1 {
			t.Errorf("family %s spread over replicas %v; want one", fam, by)
		}
		if cached[fam] == 0 {
			t.Errorf("family %s never reused a cached prompt", fam)
		}
	}
}

// replicaRequests maps each replica of deployment pair to its request count.
func replicaRequests(t *testing.T, url string) map[string]int64 {
	t.Helper()
	code, body := call(t, "GET", url+"/api/v1/deployments/pair", adminKey, "")
	var st struct {
		Replicas []struct {
			ID       string `json:"id"`
			Requests int64  `json:"requests"`
		} `json:"replicas_status"`
	}
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		t.Fatalf("status: %d %s", code, truncate(body))
	}
	out := map[string]int64{}
	for _, r := range st.Replicas {
		out[r.ID] = r.Requests
	}
	return out
}
