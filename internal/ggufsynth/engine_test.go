package ggufsynth

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raygw/raygw/internal/testenv"
)

// The 1B-class shapes write 2.5-3 GB of F16 before quantizing; they run only
// when RAYGW_SYNTH_1B=1 and not under -short.
const env1B = "RAYGW_SYNTH_1B"

// TestSynthLoadsInLlamaServer writes each shape, quantizes it with the
// engine's llama-quantize, validates it with gguf-parser-go, and has the real
// llama-server load it and generate a few tokens.
func TestSynthLoadsInLlamaServer(t *testing.T) {
	cases := []struct {
		shape, quant string
		big          bool
	}{
		{"stories260k", "f32", false},
		{"stories260k", "q4_k_m", false},
		{"qwen2.5-0.5b", "q4_k_m", false},
		{"llama-3.2-1b", "q4_k_m", true},
		{"qwen2.5-1.5b", "q4_k_m", true},
	}
	for _, c := range cases {
		t.Run(c.shape+"/"+c.quant, func(t *testing.T) {
			if c.big && (testing.Short() || os.Getenv(env1B) != "1") {
				t.Skipf("1B-class shape: set %s=1 (and drop -short) to run", env1B)
			}
			s := Shapes[c.shape]
			path := synthesize(t, s, c.quant)
			info, err := Validate(path, s, int(Quants[c.quant]))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: %d params, %.1f MiB, file type %s", c.shape, c.quant, info.Params,
				float64(info.SizeBytes)/(1<<20), info.FileType)
			t.Setenv("RAYGW_TEST_MODEL", path)
			eng := testenv.StartLlamaServer(t)
			checkModelMeta(t, eng.URL, s)
			checkGenerates(t, eng.URL, 4)
		})
	}
}

// synthesize writes the shape (F32 for f32 output, else F16 then quantized)
// under a temporary directory that is removed after the test.
func synthesize(t *testing.T, s Shape, quant string) string {
	t.Helper()
	dir := scratchDir(t)
	out := filepath.Join(dir, s.Name+"-"+quant+".gguf")
	base := "f16"
	if quant == "f32" || quant == "f16" {
		base = quant
	}
	src := out
	if base != quant {
		src = filepath.Join(dir, s.Name+"-"+base+".gguf")
	}
	start := time.Now()
	if err := WriteFile(src, Options{Shape: s, Seed: 1, Type: base}); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s in %s", filepath.Base(src), time.Since(start).Round(time.Millisecond))
	if src == out {
		return out
	}
	start = time.Now()
	if err := Quantize(t.Context(), testenv.EngineTool(t, "llama-quantize"), src, out, quant, 2); err != nil {
		t.Fatal(err)
	}
	os.Remove(src)
	t.Logf("quantized to %s in %s", quant, time.Since(start).Round(time.Millisecond))
	return out
}

// scratchDir is a temporary directory in RAM (/dev/shm) when there is one,
// since writing and quantizing a GB-sized file is disk-bound otherwise.
func scratchDir(t *testing.T) string {
	t.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "raygw-synth-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

func checkModelMeta(t *testing.T, base string, s Shape) {
	t.Helper()
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var models struct {
		Data []struct {
			Meta struct {
				NVocab int `json:"n_vocab"`
				NEmbd  int `json:"n_embd"`
				NCtx   int `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&models); err != nil || len(models.Data) == 0 {
		t.Fatalf("/v1/models: %v", err)
	}
	m := models.Data[0].Meta
	if m.NVocab != s.Vocab || m.NEmbd != s.Embd || m.NCtx != s.Ctx {
		t.Errorf("llama-server sees vocab %d embd %d ctx %d; shape has %d %d %d", m.NVocab, m.NEmbd, m.NCtx,
			s.Vocab, s.Embd, s.Ctx)
	}
}

func checkGenerates(t *testing.T, base string, n int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"prompt": "Once upon a time", "n_predict": n, "ignore_eos": true,
		"temperature": 0})
	resp, err := http.Post(base+"/completion", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		TokensPredicted int `json:"tokens_predicted"`
		TokensEvaluated int `json:"tokens_evaluated"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/completion: status %d, %v", resp.StatusCode, err)
	}
	if out.TokensPredicted != n || out.TokensEvaluated == 0 {
		t.Errorf("predicted %d tokens (want %d), evaluated %d", out.TokensPredicted, n, out.TokensEvaluated)
	}
}
