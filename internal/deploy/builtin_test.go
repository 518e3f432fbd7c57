package deploy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/runtime"
	"github.com/raygw/raygw/internal/store"
)

// TestBuiltinRunsOnTheSameMachineryButIsOwnedBySettings: the gateway's own
// model is a deployment with status, replicas and routing, launched with
// the configured argv on the configured port; it is not persisted, the API
// cannot change or delete it, and a stored deployment of its name is not
// restored over it.
func TestBuiltinRunsOnTheSameMachineryButIsOwnedBySettings(t *testing.T) {
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/props" {
			_, _ = w.Write([]byte(`{"default_generation_settings":{"n_ctx":512}}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer engine.Close()
	rt := newFakeRuntime()
	rt.addr = func(string) string { return engine.URL }
	st := &memStore{}
	stale, _ := json.Marshal(Spec{Name: "default", ModelName: "old", ModelClass: ClassOpenAI, Replicas: 1,
		EngineConfig: EngineConfig{BaseURL: "http://127.0.0.1:1"}})
	_ = st.PutDeployment(context.Background(), store.Deployment{Name: "default", Spec: stale, Generation: 1})
	m, _ := newTestManager(t, rt, st)

	var mu sync.Mutex
	var seen []ReplicaState
	launch := llamacpp.Launch{Binary: "/opt/llama-server", ModelPath: "/models/m.gguf", Alias: "upstream",
		Host: "127.0.0.1", Port: 8081, CtxSize: 4096, Parallel: 2}
	window := 2048
	spec := Spec{Name: "default", ModelName: "local-1b", ModelPath: "/models/m.gguf", ModelClass: ClassLlamaCpp}
	spec.EngineConfig.MaxModelLen = &window
	tgt, err := m.StartBuiltin(Builtin{Spec: spec, Launch: &launch, OnReplica: func(s ReplicaState, _ string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Restore(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := statusOf(t, m, "default"); s.ModelName != "local-1b" || s.Source != SourceConfig {
		t.Fatalf("the stored deployment replaced the builtin: %+v", s)
	}

	eventually(t, "replica started", func() bool { return len(rt.log()) == 1 })
	rep := rt.replica("default-1")
	if rep.spec.Host != "127.0.0.1" || rep.spec.Port != 8081 {
		t.Fatalf("replica address %s:%d, want the configured 127.0.0.1:8081", rep.spec.Host, rep.spec.Port)
	}
	argv, _ := rep.spec.Command(rep.spec.Host, rep.spec.Port)
	if !slices.Equal(argv, launch.Argv()) {
		t.Fatalf("argv %v\nwant the configured launch %v", argv, launch.Argv())
	}
	if tgt.Ready() {
		t.Fatal("ready before the replica is healthy")
	}
	if _, err := tgt.Client(); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("client while starting: %v", err)
	}
	rep.set(runtime.Healthy, 0)
	eventually(t, "running", func() bool { return statusOf(t, m, "default").Status == Running })
	eventually(t, "context read from /props", func() bool { return tgt.ContextWindow() == 512 })
	mu.Lock()
	if !slices.Equal(seen, []ReplicaState{ReplicaHealthy}) {
		t.Errorf("OnReplica saw %v", seen)
	}
	mu.Unlock()

	if _, err := m.Update(context.Background(), "default", []byte(`{"replicas":2}`)); !errorsIs(err, ErrConflict) ||
		!strings.Contains(err.Error(), "RAY_") {
		t.Fatalf("update of the builtin: %v, want a conflict naming the settings", err)
	}
	if _, err := m.Delete(context.Background(), "default"); !errorsIs(err, ErrConflict) {
		t.Fatalf("delete of the builtin: %v, want a conflict", err)
	}
	if _, err := m.Create(context.Background(), Spec{Name: "other", ModelName: "local-1b", ModelClass: ClassOpenAI,
		EngineConfig: EngineConfig{BaseURL: "http://127.0.0.1:1"}}); err == nil {
		t.Fatal("a deployment may not serve the gateway's own model name")
	}
	if got := m.Models(); len(got) != 0 {
		t.Fatalf("Models lists %v; the gateway lists its own model itself", got)
	}
	if r, _ := st.get("default"); string(r.Spec) != string(stale) {
		t.Fatalf("the builtin was persisted over the stored record: %s", r.Spec)
	}
	rep.set(runtime.Starting, 1)
	eventually(t, "unhealthy", func() bool { return statusOf(t, m, "default").Status == Unhealthy })
	if tgt.ContextWindow() != window {
		t.Fatalf("window after the replica failed = %d, want the configured %d", tgt.ContextWindow(), window)
	}
}
