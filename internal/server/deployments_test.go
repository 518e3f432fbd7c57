package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/deploy"
	"github.com/raygw/raygw/internal/engine/vllm"
	"github.com/raygw/raygw/internal/runtime"
	"github.com/raygw/raygw/internal/runtime/local"
)

// upstreamRecorder is an OpenAI-compatible endpoint that records the model
// of each generation it serves.
type upstreamRecorder struct {
	mu     sync.Mutex
	models []string
}

func (u *upstreamRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	u.mu.Lock()
	u.models = append(u.models, req.Model)
	u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","model":"`+req.Model+`","choices":[{"index":0,`+
		`"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
}

func (u *upstreamRecorder) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.models...)
}

// TestDeploymentRequestsShareCacheScopedByDeploymentAndAdapter: requests for
// a deployment get the response cache, and its keys never mix deployments
// or LoRA adapters.
func TestDeploymentRequestsShareCacheScopedByDeploymentAndAdapter(t *testing.T) {
	for _, strategy := range []string{"input+params", "input"} {
		t.Run(strategy, func(t *testing.T) { testDeploymentCacheScope(t, strategy) })
	}
}

func testDeploymentCacheScope(t *testing.T, strategy string) {
	up := &upstreamRecorder{}
	ups := httptest.NewServer(up)
	defer ups.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m, err := deploy.NewManager(deploy.Options{Runtimes: map[string]runtime.Runtime{"local": &local.Runtime{Logger: log}},
		Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = m.Close(ctx)
	}()
	for _, name := range []string{"ext", "ext2"} {
		s := deploy.Spec{Name: name, ModelName: name + "-model", ModelClass: deploy.ClassOpenAI,
			EngineConfig: deploy.EngineConfig{BaseURL: ups.URL + "/v1"}}
		s.EngineConfig.LoRAModules = []vllm.LoRAModule{{Name: "a", Path: "/lora/a"}, {Name: "b", Path: "/lora/b"}}
		if _, err := m.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(config.Options{Flags: map[string]string{"RAY_AUTH_ENABLED": "false",
		"RAY_RATE_LIMIT_ENABLED": "false", "RAY_GRACEFUL_DEGRADATION_ENABLED": "false",
		"RAY_CACHE_KEY_STRATEGY": strategy}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStages(cfg.Config, "", http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Deps{Config: cfg, Backend: secTestBackend{}, Stages: st, Deployments: m, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ext", "ext2"} {
		deadline := time.Now().Add(5 * time.Second)
		for tg, _ := m.ByName(name); !tg.Ready(); {
			if time.Now().After(deadline) {
				t.Fatalf("%s never became ready", name)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	h := srv.Handler()
	send := func(path, model, lora string) string {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"Hi"}],"temperature":0`
		if lora != "" {
			body += `,"lora_name":"` + lora + `"`
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, strings.NewReader(body+"}")))
		if rec.Code != 200 {
			t.Fatalf("%s %s %s: %d %s", path, model, lora, rec.Code, rec.Body)
		}
		return rec.Header().Get(headerCache)
	}
	steps := []struct {
		path, model, lora, cache string
	}{
		{"/d/ext/v1/chat/completions", "ext-model", "", "miss"},
		{"/d/ext/v1/chat/completions", "ext-model", "", "hit"},
		{"/v1/chat/completions", "ext-model", "", "hit"}, // the same deployment by model
		{"/d/ext/v1/chat/completions", "ext-model", "a", "miss"},
		{"/d/ext/v1/chat/completions", "ext-model:b", "", "miss"},
		{"/d/ext/v1/chat/completions", "ext-model:a", "", "hit"}, // adapter a either way
		{"/d/ext2/v1/chat/completions", "ext2-model", "", "miss"},
	}
	for i, s := range steps {
		if got := send(s.path, s.model, s.lora); got != s.cache {
			t.Fatalf("step %d %+v: X-Ray-Cache %q", i, s, got)
		}
	}
	want := []string{"ext-model", "a", "b", "ext2-model"}
	if got := up.seen(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("upstream saw models %v, want %v", got, want)
	}
}
