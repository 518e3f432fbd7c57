package vllm

import (
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/engine/openaicompat"
	"github.com/raygw/raygw/internal/openai"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, argv []string) {
	t.Helper()
	got := strings.Join(argv, "\n") + "\n"
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != got {
		t.Fatalf("%s differs:\n--- want\n%s--- got\n%s", name, want, got)
	}
}

func ptr[T any](v T) *T { return &v }

func TestServeArgvGolden(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"minimal", Config{}},
		{"seed-quantized-tp", Config{Quantization: ptr("awq"), GPUMemoryUtilization: ptr(0.9), MaxModelLen: ptr(4096),
			MaxNumBatchedTokens: ptr(4096), Dtype: ptr("auto"), TensorParallelSize: ptr(4), SwapSpace: ptr(4.0)}},
		{"seed-lora", Config{TensorParallelSize: ptr(1), Quantization: ptr(""), EnableLoRA: ptr(true), MaxLoRAs: ptr(4),
			MaxLoRARank: ptr(64), LoRAExtraVocabSize: ptr(256), LoRAModules: []LoRAModule{
				{Name: "customer-support-v1", Path: "/adapters/customer-support-v1"},
				{Name: "coding-assistant-v2", Path: "/adapters/coding-assistant-v2"}}}},
		{"lora-modules-ignored-without-enable", Config{LoRAModules: []LoRAModule{{Name: "a", Path: "/a"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Serve{ModelPath: "/models/meta-llama/Llama-2-7b-hf", ServedModelName: "meta-llama/Llama-2-7b-hf",
				Host: "127.0.0.1", Port: 8100, Config: tc.cfg}
			golden(t, tc.name+".golden", s.Argv())
		})
	}
}

func TestReadDirAndMerge(t *testing.T) {
	dir := t.TempDir()
	c, err := ReadDir(dir)
	if err != nil || c.Quantization != nil {
		t.Fatalf("no file: %+v %v", c, err)
	}
	if c, err := ReadDir(filepath.Join(dir, "model.gguf")); err != nil || c.MaxModelLen != nil {
		t.Fatalf("a file path (not a directory) has no vllm_config.json: %v", err)
	}
	body := `{"quantization":null,"gpu_memory_utilization":0.85,"max_model_len":8192,"enable_lora":true,
"lora_modules":[{"name":"a","path":"/a"}]}`
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = ReadDir(dir)
	if err != nil || *c.GPUMemoryUtilization != 0.85 || *c.MaxModelLen != 8192 || len(c.LoRAModules) != 1 || c.Quantization != nil {
		t.Fatalf("read: %+v %v", c, err)
	}
	m := Merge(c, Config{MaxModelLen: ptr(2048), Dtype: ptr("bfloat16")})
	if *m.MaxModelLen != 2048 || *m.Dtype != "bfloat16" || *m.GPUMemoryUtilization != 0.85 || len(m.LoRAModules) != 1 {
		t.Fatalf("merge: %+v", m)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"tensor_parallel":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(dir); err == nil || !strings.Contains(err.Error(), "tensor_parallel") {
		t.Fatalf("unknown key: %v", err)
	}
}

// TestOpenAIWire: vLLM is reached as an OpenAI-compatible upstream. A
// stand-in answering with vLLM's own shapes (its error object differs from
// OpenAI's) checks the client passes answers and maps vLLM's errors.
func TestOpenAIWire(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(string(b), `"too-long"`):
			w.WriteHeader(400)
			_, _ = io.WriteString(w, `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`)
		case strings.Contains(string(b), `"missing-adapter"`):
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"object":"error","message":"The model `+"`missing-adapter`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`)
		default:
			_, _ = io.WriteString(w, `{"id":"cmpl-1","object":"text_completion","model":"support-v1","choices":[{"index":0,"text":"ok","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
		}
	}))
	defer srv.Close()
	c := openaicompat.New(srv.URL, "", openaicompat.NewTransport())
	resp, err := c.Post(context.Background(), "/v1/completions", []byte(`{"model":"support-v1","prompt":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"model":"support-v1"`) {
		t.Fatalf("answer %s", b)
	}
	for model, status := range map[string]int{"too-long": 400, "missing-adapter": 404} {
		_, err := c.Post(context.Background(), "/v1/completions", []byte(`{"model":"`+model+`"}`))
		e := openai.AsError(err)
		if e.Status != status || !strings.Contains(e.Message, "does not exist") && !strings.Contains(e.Message, "maximum context length") {
			t.Fatalf("%s: %d %q", model, e.Status, e.Message)
		}
	}
}
