package ggufsynth

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/raygw/raygw/internal/testenv"
)

// TestLoRAActsInLlamaServer writes an adapter for the test model and starts
// the real llama-server with it the way raygw does (--lora PATH
// --lora-init-without-apply, one slot), beside a plain server without it.
// Greedy output with the adapter at scale 0 is the plain model's, at scale
// 1 it differs, and a scale-1 request does not leak into a later scale-0
// one on the same slot. It also pins an engine behaviour raygw has to work
// around: a request with no "lora" field runs every adapter at its launch
// scale (1), --lora-init-without-apply notwithstanding.
func TestLoRAActsInLlamaServer(t *testing.T) {
	model := testenv.Model(t)
	path := filepath.Join(t.TempDir(), "one.gguf")
	if _, err := LoRA(model, path, LoRAOptions{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	plain := greedy(t, testenv.StartLlamaServer(t).URL, nil)
	eng := testenv.StartLlamaServer(t, "--parallel", "1", "--lora", path, "--lora-init-without-apply")

	var adapters []struct {
		ID    int     `json:"id"`
		Path  string  `json:"path"`
		Scale float64 `json:"scale"`
	}
	getJSON(t, eng.URL+"/lora-adapters", &adapters)
	if len(adapters) != 1 || adapters[0].ID != 0 || adapters[0].Path != path {
		t.Fatalf("/lora-adapters = %+v, want one adapter with id 0 and path %s", adapters, path)
	}
	t.Logf("/lora-adapters: %+v", adapters)

	at := func(scale float64) []map[string]any { return []map[string]any{{"id": 0, "scale": scale}} }
	steps := []struct {
		name string
		lora []map[string]any
		want string // "" checks nothing here
	}{
		{"scale 0", at(0), plain},
		{"scale 1", at(1), ""},
		{"scale 0 after scale 1", at(0), plain},
		{"scale 1 again", at(1), ""},
		{"no lora field", nil, ""},
	}
	got := map[string]string{}
	for _, st := range steps {
		got[st.name] = greedy(t, eng.URL, st.lora)
		t.Logf("%-22s %q", st.name, got[st.name])
		if st.want != "" && got[st.name] != st.want {
			t.Errorf("%s = %q, want the plain model's %q", st.name, got[st.name], st.want)
		}
	}
	if got["scale 1"] == plain {
		t.Errorf("the adapter at scale 1 did not change the greedy output: %q", plain)
	}
	if got["scale 1 again"] != got["scale 1"] {
		t.Errorf("scale 1 is not deterministic: %q then %q", got["scale 1"], got["scale 1 again"])
	}
	if got["no lora field"] != got["scale 1"] {
		t.Errorf("no lora field = %q, scale 1 = %q: llama-server no longer applies the launch scale by default "+
			"(raygw sends explicit scales either way)", got["no lora field"], got["scale 1"])
	}
}

// greedy is a temperature-0 completion of a fixed prompt, with the lora
// field when it is not nil.
func greedy(t *testing.T, url string, lora []map[string]any) string {
	t.Helper()
	req := map[string]any{"prompt": "Once upon a time", "n_predict": 24, "temperature": 0, "seed": 42}
	if lora != nil {
		req["lora"] = lora
	}
	body, _ := json.Marshal(req)
	resp, err := http.Post(url+"/completion", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out struct {
		Content string `json:"content"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("/completion with lora %v: %d %s", lora, resp.StatusCode, b)
	}
	return out.Content
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, v) != nil {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
}
