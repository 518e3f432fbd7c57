package cli

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raygw/raygw/internal/testenv"
)

func TestModelSynthCommand(t *testing.T) {
	dir := t.TempDir()
	q := testenv.EngineTool(t, "llama-quantize")
	cases := []struct {
		name, quant string
		extra       []string
		wantType    string
	}{
		{"quantized", "q4_k_m", []string{"--quantize-binary", q}, "MOSTLY_Q4_K_M"},
		{"f32 direct", "f32", nil, "MOSTLY_F32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, c.quant+".gguf")
			args := append([]string{"model", "synth", "--shape", "stories260k", "--quant", c.quant, "-o", out, "--json"}, c.extra...)
			text, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			var info struct {
				Arch     string `json:"architecture"`
				Vocab    int    `json:"n_vocab"`
				FileType string `json:"file_type"`
			}
			if err := json.NewDecoder(strings.NewReader(text[strings.Index(text, "{"):])).Decode(&info); err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			if info.Arch != "llama" || info.Vocab != 512 || info.FileType != c.wantType {
				t.Errorf("info = %+v", info)
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".synth-*"))
			if len(left) != 0 {
				t.Errorf("intermediates left behind: %v", left)
			}
		})
	}
	t.Run("reproducible", func(t *testing.T) {
		a, b := filepath.Join(dir, "a.gguf"), filepath.Join(dir, "b.gguf")
		for _, p := range []string{a, b} {
			if text, err := runCLI(t, "model", "synth", "--shape", "stories260k", "--quant", "f16", "--seed", "9", "-o", p); err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
		}
		ba, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		if len(ba) == 0 || sha256.Sum256(ba) != sha256.Sum256(bb) {
			t.Error("same seed wrote different files")
		}
	})
}

func TestModelSynthErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown shape", []string{"model", "synth", "--shape", "gpt-9", "-o", "/tmp/x.gguf"}, "known: llama-3.2-1b"},
		{"unknown quant", []string{"model", "synth", "--shape", "stories260k", "--quant", "q9", "-o", "/tmp/x.gguf"}, "unknown --quant"},
		{"no output", []string{"model", "synth", "--shape", "stories260k"}, "-o FILE.gguf"},
		{"no shape", []string{"model", "synth", "-o", "/tmp/x.gguf"}, "shape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runCLI(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}
