package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateNamesTheField(t *testing.T) {
	model := modelFile(t)
	vdir := t.TempDir()
	base := func() Spec {
		return Spec{Name: "ok", ModelName: "m", ModelPath: model, ModelClass: ClassLlamaCpp, Replicas: 1}
	}
	tests := []struct {
		name  string
		edit  func(*Spec)
		field string // "" valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"empty name", func(s *Spec) { s.Name = "" }, "name"},
		{"uppercase name", func(s *Spec) { s.Name = "Web" }, "name"},
		{"leading dash", func(s *Spec) { s.Name = "-web" }, "name"},
		{"64 chars", func(s *Spec) { s.Name = strings.Repeat("a", 64) }, "name"},
		{"63 chars", func(s *Spec) { s.Name = strings.Repeat("a", 63) }, ""},
		{"unknown cluster", func(s *Spec) { s.Cluster = "k8s" }, "cluster"},
		{"no model name", func(s *Spec) { s.ModelName = "" }, "model_name"},
		{"model name with space", func(s *Spec) { s.ModelName = "a b" }, "model_name"},
		{"missing model file", func(s *Spec) { s.ModelPath = "/nonexistent/x.gguf" }, "model_path"},
		{"bad class", func(s *Spec) { s.ModelClass = "onnx" }, "model_class"},
		{"too many replicas", func(s *Spec) { s.Replicas = 65 }, "replicas"},
		{"negative replicas", func(s *Spec) { s.Replicas = -1 }, "replicas"},
		{"negative cpus", func(s *Spec) { s.CPUsPerReplica = -1 }, "cpus_per_replica"},
		{"tp != gpus", func(s *Spec) { tp := 2; s.EngineConfig.TensorParallelSize = &tp; s.GPUsPerReplica = 1 }, "engine_config.tensor_parallel_size"},
		{"tp == gpus", func(s *Spec) { tp := 2; s.EngineConfig.TensorParallelSize = &tp; s.GPUsPerReplica = 2 }, ""},
		{"bad quantization", func(s *Spec) { q := "int3"; s.EngineConfig.Quantization = &q }, "engine_config.quantization"},
		{"memory utilisation > 1", func(s *Spec) { u := 1.5; s.EngineConfig.GPUMemoryUtilization = &u }, "engine_config.gpu_memory_utilization"},
		{"bad dtype", func(s *Spec) { d := "int8"; s.EngineConfig.Dtype = &d }, "engine_config.dtype"},
		{"zero max_model_len", func(s *Spec) { n := 0; s.EngineConfig.MaxModelLen = &n }, "engine_config.max_model_len"},
		{"lora without path", func(s *Spec) { s.EngineConfig.LoRAModules = []loraT{{Name: "a"}} }, "engine_config.lora_modules[0].path"},
		{"lora duplicate", func(s *Spec) {
			s.EngineConfig.LoRAModules = []loraT{{Name: "a", Path: model}, {Name: "a", Path: model}}
		}, "engine_config.lora_modules[1].name"},
		{"lora name with colon", func(s *Spec) { s.EngineConfig.LoRAModules = []loraT{{Name: "a:b", Path: model}} }, "engine_config.lora_modules[0].name"},
		{"vllm lora needs enable_lora", func(s *Spec) {
			s.ModelClass, s.ModelPath, s.GPUsPerReplica = ClassVLLM, vdir, 1
			s.EngineConfig.LoRAModules = []loraT{{Name: "a", Path: "/adapters/a"}}
		}, "engine_config.enable_lora"},
		{"openai needs base_url", func(s *Spec) { s.ModelClass = ClassOpenAI }, "engine_config.base_url"},
		{"openai one replica", func(s *Spec) {
			s.ModelClass, s.EngineConfig.BaseURL, s.Replicas = ClassOpenAI, "http://127.0.0.1:1/v1", 2
		}, "replicas"},
		{"health interval too short", func(s *Spec) { s.Health.IntervalMS = 10 }, "health.interval_ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.edit(&s)
			s.Defaults()
			err := s.Validate([]string{"local"})
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid spec refused: %v", err)
				}
				return
			}
			ve, ok := err.(ValidationError)
			if !ok || len(ve) == 0 {
				t.Fatalf("err = %v, want a ValidationError on %s", err, tc.field)
			}
			if ve[0].Field != tc.field {
				t.Fatalf("field = %s (%v), want %s", ve[0].Field, ve, tc.field)
			}
		})
	}
}

func TestVLLMConfigFileAndOverrides(t *testing.T) {
	dir := t.TempDir()
	file := `{"quantization":"awq","gpu_memory_utilization":0.9,"tensor_parallel_size":2,"max_model_len":4096}`
	if err := os.WriteFile(filepath.Join(dir, "vllm_config.json"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	s := Spec{Name: "v", ModelName: "m", ModelPath: dir, ModelClass: ClassVLLM, GPUsPerReplica: 1}
	s.Defaults()
	err := s.Validate([]string{"local"})
	if ve, ok := err.(ValidationError); !ok || ve[0].Field != "engine_config.tensor_parallel_size" {
		t.Fatalf("tp 2 from the file with 1 GPU: %v", err)
	}
	s.GPUsPerReplica = 2
	n := 2048
	s.EngineConfig.MaxModelLen = &n
	if err := s.Validate([]string{"local"}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Effective()
	if err != nil {
		t.Fatal(err)
	}
	if *c.Quantization != "awq" || *c.MaxModelLen != 2048 || *c.TensorParallelSize != 2 {
		t.Fatalf("effective config: quant %v len %v tp %v", *c.Quantization, *c.MaxModelLen, *c.TensorParallelSize)
	}
	if w := contextWindow(s, Defaults{}); w != 2048 {
		t.Fatalf("context window %d, want the overridden max_model_len", w)
	}
	if err := os.WriteFile(filepath.Join(dir, "vllm_config.json"), []byte(`{"quantisation":"awq"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate([]string{"local"}); err == nil || !strings.Contains(err.Error(), "quantisation") {
		t.Fatalf("a misspelt file key must be refused by name: %v", err)
	}
}

func TestDecodeSpecStrict(t *testing.T) {
	for _, tc := range []struct{ body, field string }{
		{`{"name":"a","replica":2}`, "replica"},
		{`{"name":"a","replicas":"two"}`, "replicas"},
		{`{"name":"a","engine_config":{"ctx":1}}`, "ctx"},
		{`not json`, "body"},
	} {
		_, err := DecodeSpec([]byte(tc.body))
		ve, ok := err.(ValidationError)
		if !ok || ve[0].Field != tc.field {
			t.Errorf("%s: err %v, want field %s", tc.body, err, tc.field)
		}
	}
}

func FuzzDecodeSpec(f *testing.F) {
	f.Add([]byte(`{"name":"web","model_name":"m","model_path":"/x","replicas":2,"engine_config":{"lora_modules":[{"name":"a","path":"/a"}]}}`))
	f.Add([]byte(`{"name":"v","model_class":"vllm","engine_config":{"quantization":null,"tensor_parallel_size":4}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSpec(b)
		if err != nil {
			if _, ok := err.(ValidationError); !ok {
				t.Fatalf("decode error is not a ValidationError: %T", err)
			}
			return
		}
		s.Defaults()
		if err := s.Validate([]string{"local"}); err != nil {
			if ve, ok := err.(ValidationError); !ok || len(ve) == 0 || ve[0].Field == "" {
				t.Fatalf("validation error without a field: %v", err)
			}
		}
	})
}
