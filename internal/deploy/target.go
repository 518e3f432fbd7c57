package deploy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
)

// Target is one deployment as the data path uses it: an engine client that
// routes across its replicas, its readiness and context window, and its
// LoRA adapters. It satisfies the server's Backend interface.
type Target struct {
	d *deployment
	// Adapter is the LoRA adapter the request named ("" for none).
	Adapter string
}

// Lookup finds the deployment serving model: its model_name exactly, or
// "model_name:adapter" naming a registered LoRA adapter. The 404 lists the
// models served.
func (m *Manager) Lookup(model string) (*Target, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, d := range m.deps {
		if !d.isDeleting() && d.specSnapshot().ModelName == model {
			return &Target{d: d}, nil
		}
	}
	if i := strings.LastIndexByte(model, ':'); i > 0 {
		base, adapter := model[:i], model[i+1:]
		for _, d := range m.deps {
			if !d.isDeleting() && d.specSnapshot().ModelName == base {
				t := &Target{d: d}
				return t, t.SetAdapter(adapter)
			}
		}
	}
	return nil, openai.NotFound("model_not_found", "the model %q does not exist; served models: %s", model, strings.Join(m.modelsLocked(), ", "))
}

// ByName finds a deployment by its name (the /d/{name}/v1 routes).
func (m *Manager) ByName(name string) (*Target, error) {
	d, err := m.get(name)
	if err != nil || d.isDeleting() {
		return nil, openai.NotFound("deployment_not_found", "no deployment is named %q", name)
	}
	return &Target{d: d}, nil
}

// Models lists the model names the API's deployments serve, sorted (the
// gateway's own model is listed by the gateway).
func (m *Manager) Models() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.modelsLocked()
}

func (m *Manager) modelsLocked() []string {
	var out []string
	for _, d := range m.deps {
		if !d.isDeleting() && d.builtin == nil {
			out = append(out, d.specSnapshot().ModelName)
		}
	}
	sort.Strings(out)
	return out
}

// Name is the deployment's name.
func (t *Target) Name() string { return t.d.name }

// ModelName is what clients send as model.
func (t *Target) ModelName() string { return t.d.specSnapshot().ModelName }

// Spec is the deployment's current spec.
func (t *Target) Spec() Spec { return t.d.specSnapshot() }

// Client returns the routing engine client, or 503 while no replica is healthy.
func (t *Target) Client() (*openaicompat.Client, error) {
	if !t.Ready() {
		err := fmt.Errorf("deployment %s: %w", t.d.name, errNoReplica)
		if t.Builtin() {
			return nil, openai.Unavailable(2, err, "the model engine is not ready; retry shortly")
		}
		return nil, openai.Unavailable(2, err, "deployment %s has no healthy replica; retry shortly", t.d.name)
	}
	return t.d.client, nil
}

// Ready reports whether some replica can serve.
func (t *Target) Ready() bool { return t.d.pool.Serving() }

// ReportQueue makes the deployment's metrics count the requests f says are
// waiting in the gateway for it (its admission queue).
func (t *Target) ReportQueue(f func() int) { t.d.queued.Store(f) }

// Capacity is how many requests the healthy replicas run at once (their
// llama.cpp slots); known is false for engines whose slot count raygw does
// not know (vLLM, external endpoints).
func (t *Target) Capacity() (n int, known bool) { return t.d.pool.Capacity() }

// ContextWindow is the deployment's max model length (0: unknown), lowered
// to the smallest per-slot context its healthy llama.cpp replicas report.
func (t *Target) ContextWindow() int {
	w := contextWindow(t.d.specSnapshot(), t.d.m.opt.Defaults)
	t.d.nctx.Range(func(_, v any) bool {
		if n := v.(int); n > 0 && (w <= 0 || n < w) {
			w = n
		}
		return true
	})
	return w
}

// SetAdapter selects a registered LoRA adapter; unknown names are 404.
func (t *Target) SetAdapter(name string) error {
	if name == "" {
		t.Adapter = ""
		return nil
	}
	for _, a := range t.d.specSnapshot().EngineConfig.LoRAModules {
		if a.Name == name {
			t.Adapter = name
			return nil
		}
	}
	return openai.NotFound("adapter_not_found", "the LoRA adapter %q is not registered on deployment %s", name, t.d.name)
}

// ApplyAdapter rewrites an upstream request for the selected adapter: for
// llama.cpp the per-request `lora` list (the adapter at scale 1, others 0;
// every adapter at 0 for the base model, since llama-server applies its
// launch scales to a request without the list);
// for vLLM and external endpoints the adapter's name as model. lora_name is
// removed either way, so the engine never sees raygw's field.
func (t *Target) ApplyAdapter(model *string, extra *map[string]json.RawMessage) {
	if *extra != nil {
		delete(*extra, "lora_name")
	}
	s := t.d.specSnapshot()
	*model = s.ModelName
	if t.Adapter == "" && (s.ModelClass != ClassLlamaCpp || len(s.EngineConfig.LoRAModules) == 0) {
		return
	}
	if s.ModelClass != ClassLlamaCpp {
		*model = t.Adapter
		return
	}
	type lora struct {
		ID    int     `json:"id"`
		Scale float64 `json:"scale"`
	}
	list := make([]lora, 0, len(s.EngineConfig.LoRAModules))
	for i, a := range s.EngineConfig.LoRAModules {
		sc := 0.0
		if a.Name == t.Adapter {
			sc = 1
		}
		list = append(list, lora{ID: i, Scale: sc})
	}
	raw, _ := json.Marshal(list)
	if *extra == nil {
		*extra = map[string]json.RawMessage{}
	}
	(*extra)["lora"] = raw
}

// Reject records a request the gateway refused before routing (4xx/5xx).
func (t *Target) Reject(status int) { t.d.win.record("", status, 0, 0) }
