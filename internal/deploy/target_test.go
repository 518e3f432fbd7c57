package deploy

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/raygw/raygw/internal/openai"
	"github.com/raygw/raygw/internal/runtime"
)

func TestLoRASelection(t *testing.T) {
	m, _ := newTestManager(t, newFakeRuntime(), nil)
	s := testSpec(t, "base", 1)
	s.ModelName = "story"
	s.EngineConfig.LoRAModules = []vllmLoRA{{Name: "support", Path: modelFile(t)}, {Name: "code", Path: modelFile(t)}}
	if _, err := m.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, route, model, loraName string
		status                       int
		lora                         string
	}{
		{"plain model", "", "story", "", 0, `[{"id":0,"scale":0},{"id":1,"scale":0}]`},
		{"model:adapter", "", "story:code", "", 0, `[{"id":0,"scale":0},{"id":1,"scale":1}]`},
		{"lora_name", "", "story", `"support"`, 0, `[{"id":0,"scale":1},{"id":1,"scale":0}]`},
		{"lora_name on /d/", "base", "story", `"code"`, 0, `[{"id":0,"scale":0},{"id":1,"scale":1}]`},
		{"unknown adapter", "", "story:nope", "", 404, ""},
		{"unknown lora_name", "", "story", `"nope"`, 404, ""},
		{"wrong model on /d/", "base", "other", "", 404, ""},
		{"unknown model", "", "other", "", 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			extra := map[string]json.RawMessage{}
			if tc.loraName != "" {
				extra["lora_name"] = json.RawMessage(tc.loraName)
			}
			tgt, err := m.Resolve(tc.route, tc.model, extra)
			if tc.status != 0 {
				if e := openai.AsError(err); err == nil || e.Status != tc.status {
					t.Fatalf("err = %v, want %d", err, tc.status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			model := tc.model
			tgt.ApplyAdapter(&model, &extra)
			if model != "story" || string(extra["lora"]) != tc.lora || extra["lora_name"] != nil {
				t.Fatalf("upstream model %q lora %s extra %v", model, extra["lora"], extra)
			}
		})
	}
	_, err := m.Lookup("other")
	if err == nil || !strings.Contains(err.Error(), "story") {
		t.Fatalf("404 must list the served models: %v", err)
	}
}

func TestVLLMAdapterIsTheModel(t *testing.T) {
	m, _ := newTestManager(t, newFakeRuntime(), nil)
	on := true
	s := Spec{Name: "v", ModelName: "llama", ModelPath: t.TempDir(), ModelClass: ClassVLLM, Replicas: 1}
	s.EngineConfig.EnableLoRA = &on
	s.EngineConfig.LoRAModules = []vllmLoRA{{Name: "support-v1", Path: "/adapters/s"}}
	if _, err := m.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	tgt, err := m.Resolve("", "llama:support-v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	model, extra := "llama:support-v1", map[string]json.RawMessage{}
	tgt.ApplyAdapter(&model, &extra)
	if model != "support-v1" || extra["lora"] != nil {
		t.Fatalf("vLLM selects an adapter by model name: model %q extra %v", model, extra)
	}
}

// closedAddr is a loopback URL nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + l.Addr().String()
	l.Close()
	return addr
}

func TestRetryOnConnectFailureAndNoReplica(t *testing.T) {
	var served atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r) // GET /props when the replica turns healthy
			return
		}
		served.Add(1)
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b) // echo: shows the body was replayed whole
	}))
	defer up.Close()
	dead := closedAddr(t)
	rt := newFakeRuntime()
	rt.addr = func(id string) string {
		if id == "r-1" {
			return dead
		}
		return up.URL
	}
	m, _ := newTestManager(t, rt, nil)
	if _, err := m.Create(context.Background(), testSpec(t, "r", 2)); err != nil {
		t.Fatal(err)
	}
	tgt, _ := m.ByName("r")
	if _, err := tgt.Client(); openai.AsError(err).Status != 503 {
		t.Fatalf("no healthy replica: %v, want 503", err)
	}
	eventually(t, "starts", func() bool { return len(rt.log()) == 2 })
	rt.replica("r-1").set(runtime.Healthy, 0)
	rt.replica("r-2").set(runtime.Healthy, 0)
	eventually(t, "running", func() bool { return statusOf(t, m, "r").Status == Running })
	c, err := tgt.Client()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		resp, err := c.Post(context.Background(), "/v1/completions", []byte(`{"prompt":"hi"}`))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != `{"prompt":"hi"}` {
			t.Fatalf("replayed body %q", b)
		}
	}
	if served.Load() != 4 {
		t.Fatalf("served %d of 4", served.Load())
	}
	mt, _ := m.Metrics("r")
	if mt.Requests != 4 || mt.ErrorRate5xx != 0 {
		t.Fatalf("metrics %+v", mt)
	}
}

func TestReplicaTransportLeavesAThreadForHealth(t *testing.T) {
	base := &http.Transport{}
	opt := Options{Transport: base}
	s := Spec{ModelClass: ClassLlamaCpp, EngineConfig: EngineConfig{ThreadsHTTP: 4}}
	tr, ok := replicaTransport(opt, s).(*http.Transport)
	if !ok || tr == base || tr.MaxConnsPerHost != 3 {
		t.Fatalf("llama.cpp with 4 HTTP threads: %+v", tr)
	}
	s.EngineConfig.ThreadsHTTP = 1
	if replicaTransport(opt, s) != http.RoundTripper(base) {
		t.Fatal("a single HTTP thread cannot be split; the shared transport stays")
	}
	if replicaTransport(opt, Spec{ModelClass: ClassOpenAI}) != http.RoundTripper(base) {
		t.Fatal("external endpoints use the shared transport")
	}
}
