// Package deploy owns the model-serving control plane: deployment specs and
// their validation, deployment and replica states, the reconciler (one owner
// goroutine per deployment driving a runtime.Runtime), rolling updates,
// scaling and drains, the routing client the data path uses, per-deployment
// metrics, and the REST API under /api/v1/deployments.
package deploy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/raygw/raygw/internal/engine/vllm"
)

// Model classes.
const (
	ClassLlamaCpp = "llama.cpp"
	ClassVLLM     = "vllm"
	ClassOpenAI   = "openai"
)

// Limits on a spec.
const (
	MaxReplicas = 64
	maxNameLen  = 63
)

// Spec is the desired state of one deployment, in the seed's JSON names.
type Spec struct {
	Name           string       `json:"name"`
	Cluster        string       `json:"cluster"`
	ModelName      string       `json:"model_name"`
	ModelPath      string       `json:"model_path,omitempty"`
	ModelClass     string       `json:"model_class"`
	Replicas       int          `json:"replicas"`
	GPUsPerReplica int          `json:"gpus_per_replica"`
	CPUsPerReplica int          `json:"cpus_per_replica"`
	EngineConfig   EngineConfig `json:"engine_config"`
	Health         Health       `json:"health"`
	// DrainTimeoutMS bounds how long a stopping replica keeps in-flight
	// requests (default 30000).
	DrainTimeoutMS int `json:"drain_timeout_ms,omitempty"`
}

// EngineConfig is the engine's settings. The vLLM fields are those of the
// model path's vllm_config.json (read when present, overridden here); the
// llama.cpp fields override the RAY_LLAMA_CPP_* launch profile; base_url
// names an external OpenAI-compatible endpoint (model class openai).
// lora_modules registers LoRA adapters for both engines.
type EngineConfig struct {
	vllm.Config

	Binary       string   `json:"binary,omitempty"`
	CtxSize      int      `json:"ctx_size,omitempty"`
	Parallel     int      `json:"parallel,omitempty"`
	Threads      int      `json:"threads,omitempty"`
	ThreadsBatch int      `json:"threads_batch,omitempty"`
	ThreadsHTTP  int      `json:"threads_http,omitempty"`
	BatchSize    int      `json:"batch_size,omitempty"`
	UBatchSize   int      `json:"ubatch_size,omitempty"`
	ExtraArgs    []string `json:"extra_args,omitempty"`

	BaseURL   string `json:"base_url,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// Health tunes replica health checks and restarts; zero fields take the
// defaults (10 s interval, 2 s timeout, 3 failures, backoff 1 s .. 5 min,
// path /health, or /models for model class openai).
type Health struct {
	Path           string `json:"path,omitempty"`
	IntervalMS     int    `json:"interval_ms,omitempty"`
	TimeoutMS      int    `json:"timeout_ms,omitempty"`
	FailureLimit   int    `json:"failure_limit,omitempty"`
	BackoffBaseMS  int    `json:"backoff_base_ms,omitempty"`
	BackoffMaxMS   int    `json:"backoff_max_ms,omitempty"`
	StartTimeoutMS int    `json:"start_timeout_ms,omitempty"`
}

// FieldError is one invalid field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError lists every invalid field of a spec.
type ValidationError []FieldError

func (v ValidationError) Error() string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = f.Field + ": " + f.Message
	}
	return strings.Join(parts, "; ")
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)

// Defaults fills unset fields: cluster local, one replica, one GPU for vLLM,
// and a tensor-parallel size equal to the GPUs per replica.
func (s *Spec) Defaults() {
	if s.Cluster == "" {
		s.Cluster = "local"
	}
	if s.ModelClass == "" {
		s.ModelClass = ClassLlamaCpp
	}
	if s.Replicas == 0 {
		s.Replicas = 1
	}
	if s.ModelClass == ClassVLLM && s.GPUsPerReplica == 0 {
		s.GPUsPerReplica = 1
	}
}

// Validate checks the spec; clusters lists the runtimes available. Every
// problem names its JSON field.
func (s *Spec) Validate(clusters []string) error {
	var errs ValidationError
	add := func(field, format string, a ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	switch {
	case s.Name == "":
		add("name", "is required")
	case len(s.Name) > maxNameLen || !dnsLabel.MatchString(s.Name):
		add("name", "must be a DNS label: 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit")
	}
	if !contains(clusters, s.Cluster) {
		add("cluster", "runtime %q is not available (available: %s)", s.Cluster, strings.Join(clusters, ", "))
	}
	if s.ModelName == "" {
		add("model_name", "is required")
	} else if len(s.ModelName) > 256 || strings.ContainsAny(s.ModelName, " \t\r\n") {
		add("model_name", "must be at most 256 characters without whitespace")
	}
	switch s.ModelClass {
	case ClassLlamaCpp, ClassVLLM:
		if s.ModelPath == "" {
			add("model_path", "is required for model_class %s", s.ModelClass)
		} else if _, err := os.Stat(s.ModelPath); err != nil {
			add("model_path", "cannot be read: %v", err)
		}
	case ClassOpenAI:
		if u, err := url.Parse(s.EngineConfig.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("engine_config.base_url", "must be an http(s) URL for model_class openai")
		}
		if s.Replicas != 1 {
			add("replicas", "must be 1 for model_class openai (an external endpoint)")
		}
	default:
		add("model_class", "must be llama.cpp, vllm or openai")
	}
	if s.Replicas < 1 || s.Replicas > MaxReplicas {
		add("replicas", "must be between 1 and %d", MaxReplicas)
	}
	if s.GPUsPerReplica < 0 || s.GPUsPerReplica > 16 {
		add("gpus_per_replica", "must be between 0 and 16")
	}
	if s.CPUsPerReplica < 0 || s.CPUsPerReplica > 1024 {
		add("cpus_per_replica", "must be between 0 and 1024")
	}
	if s.DrainTimeoutMS < 0 {
		add("drain_timeout_ms", "must not be negative")
	}
	s.validateHealth(add)
	s.validateEngine(add)
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func (s *Spec) validateHealth(add func(string, string, ...any)) {
	h := s.Health
	for _, f := range []struct {
		name string
		v    int
	}{{"interval_ms", h.IntervalMS}, {"timeout_ms", h.TimeoutMS}, {"failure_limit", h.FailureLimit},
		{"backoff_base_ms", h.BackoffBaseMS}, {"backoff_max_ms", h.BackoffMaxMS}, {"start_timeout_ms", h.StartTimeoutMS}} {
		if f.v < 0 {
			add("health."+f.name, "must not be negative")
		}
	}
	if h.Path != "" && (!strings.HasPrefix(h.Path, "/") || strings.ContainsAny(h.Path, " ?#")) {
		add("health.path", "must be a URL path starting with '/'")
	}
	if h.IntervalMS > 0 && h.IntervalMS < 50 {
		add("health.interval_ms", "must be at least 50")
	}
}

// Effective is the engine configuration a replica starts with: for vLLM the
// model path's vllm_config.json overridden by the spec.
func (s *Spec) Effective() (vllm.Config, error) {
	if s.ModelClass != ClassVLLM {
		return s.EngineConfig.Config, nil
	}
	file, err := vllm.ReadDir(s.ModelPath)
	if err != nil {
		return vllm.Config{}, err
	}
	c := vllm.Merge(file, s.EngineConfig.Config)
	if c.TensorParallelSize == nil {
		tp := s.GPUsPerReplica
		c.TensorParallelSize = &tp
	}
	return c, nil
}

func (s *Spec) validateEngine(add func(string, string, ...any)) {
	c, err := s.Effective()
	if err != nil {
		add("engine_config", "%v", err)
		return
	}
	const p = "engine_config."
	if c.TensorParallelSize != nil && *c.TensorParallelSize != s.GPUsPerReplica {
		add(p+"tensor_parallel_size", "(%d) must equal gpus_per_replica (%d)", *c.TensorParallelSize, s.GPUsPerReplica)
	}
	if q := c.Quantization; q != nil && *q != "" && *q != "awq" && *q != "gptq" {
		add(p+"quantization", "must be awq, gptq or null")
	}
	if u := c.GPUMemoryUtilization; u != nil && (*u <= 0 || *u > 1) {
		add(p+"gpu_memory_utilization", "must be in (0, 1]")
	}
	if d := c.Dtype; d != nil && !contains([]string{"auto", "float16", "bfloat16", "float32"}, *d) {
		add(p+"dtype", "must be auto, float16, bfloat16 or float32")
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_model_len", c.MaxModelLen}, {"max_num_batched_tokens", c.MaxNumBatchedTokens},
		{"max_loras", c.MaxLoRAs}, {"max_lora_rank", c.MaxLoRARank}} {
		if f.v != nil && *f.v <= 0 {
			add(p+f.name, "must be positive")
		}
	}
	if c.SwapSpace != nil && *c.SwapSpace < 0 {
		add(p+"swap_space", "must not be negative")
	}
	s.validateLoRA(c, add)
	e := s.EngineConfig
	for _, f := range []struct {
		name string
		v    int
	}{{"ctx_size", e.CtxSize}, {"parallel", e.Parallel}, {"threads", e.Threads}, {"threads_batch", e.ThreadsBatch},
		{"threads_http", e.ThreadsHTTP}, {"batch_size", e.BatchSize}, {"ubatch_size", e.UBatchSize}} {
		if f.v < 0 {
			add(p+f.name, "must not be negative")
		}
	}
}

func (s *Spec) validateLoRA(c vllm.Config, add func(string, string, ...any)) {
	const p = "engine_config."
	seen := map[string]bool{}
	for i, m := range c.LoRAModules {
		f := fmt.Sprintf("%slora_modules[%d]", p, i)
		switch {
		case m.Name == "" || strings.ContainsAny(m.Name, " \t\n:"):
			add(f+".name", "must be non-empty without whitespace or ':'")
		case seen[m.Name]:
			add(f+".name", "%q is registered twice", m.Name)
		}
		seen[m.Name] = true
		if m.Path == "" {
			add(f+".path", "is required")
		} else if s.ModelClass == ClassLlamaCpp {
			if _, err := os.Stat(m.Path); err != nil {
				add(f+".path", "cannot be read: %v", err)
			}
		}
	}
	if s.ModelClass == ClassVLLM && len(c.LoRAModules) > 0 && (c.EnableLoRA == nil || !*c.EnableLoRA) {
		add(p+"enable_lora", "must be true when lora_modules are registered")
	}
	if c.MaxLoRAs != nil && len(c.LoRAModules) > 0 && *c.MaxLoRAs < 1 {
		add(p+"max_loras", "must be at least 1")
	}
}

// Clone deep-copies the spec.
func (s Spec) Clone() Spec {
	b, _ := json.Marshal(s)
	var out Spec
	_ = json.Unmarshal(b, &out)
	return out
}

// DecodeSpec reads a spec strictly: unknown fields are errors naming them.
func DecodeSpec(b []byte) (Spec, error) {
	var s Spec
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, ValidationError{{Field: fieldOf(err), Message: err.Error()}}
	}
	return s, nil
}

func fieldOf(err error) string {
	var te *json.UnmarshalTypeError
	if ok := asType(err, &te); ok && te.Field != "" {
		return te.Field
	}
	msg := err.Error()
	if i := strings.Index(msg, `unknown field "`); i >= 0 {
		rest := msg[i+len(`unknown field "`):]
		if j := strings.IndexByte(rest, '"'); j >= 0 {
			return rest[:j]
		}
	}
	return "body"
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
