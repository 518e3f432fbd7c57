package ggufsynth

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/raygw/raygw/internal/testenv"
)

func TestStoriesShapeMatchesTheRealModel(t *testing.T) {
	real := testenv.Model(t)
	if filepath.Base(real) != "stories260K.gguf" {
		t.Skip("RAYGW_TEST_MODEL is not the stories model")
	}
	s := Shapes["stories260k"]
	info, err := Validate(real, s, -1)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.ParseGGUFFile(real)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(f.TensorInfos), len(s.tensors(ggmlF32)); got != want {
		t.Errorf("real model has %d tensors, shape lays out %d", got, want)
	}
	if info.Params != s.Params() {
		t.Errorf("real model has %d parameters, shape %d", info.Params, s.Params())
	}
}

func TestWriteIsReproducibleAndValid(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []string{"f32", "f16"} {
		t.Run(typ, func(t *testing.T) {
			s := Shapes["stories260k"]
			var a, b, c bytes.Buffer
			if err := Write(&a, Options{Shape: s, Seed: 7, Type: typ}, false); err != nil {
				t.Fatal(err)
			}
			Write(&b, Options{Shape: s, Seed: 7, Type: typ}, false)
			Write(&c, Options{Shape: s, Seed: 8, Type: typ}, false)
			if sha256.Sum256(a.Bytes()) != sha256.Sum256(b.Bytes()) {
				t.Error("same seed, different bytes")
			}
			if bytes.Equal(a.Bytes(), c.Bytes()) {
				t.Error("different seeds, same bytes")
			}
			size, err := Size(Options{Shape: s, Seed: 7, Type: typ})
			if err != nil || size != int64(a.Len()) {
				t.Errorf("Size = %d, %v; wrote %d", size, err, a.Len())
			}
			p := filepath.Join(dir, typ+".gguf")
			os.WriteFile(p, a.Bytes(), 0o644)
			if _, err := Validate(p, s, int(Quants[typ])); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestVocabularies(t *testing.T) {
	for _, name := range ShapeNames() {
		t.Run(name, func(t *testing.T) {
			s := Shapes[name]
			kvs, err := metadata(s, 1)
			if err != nil {
				t.Fatal(err)
			}
			m := map[string]any{}
			for _, p := range kvs {
				m[p.key] = p.val
			}
			toks := m["tokenizer.ggml.tokens"].([]string)
			if len(toks) != s.Vocab || len(m["tokenizer.ggml.token_type"].([]int32)) != s.Vocab {
				t.Fatalf("%d tokens, want %d", len(toks), s.Vocab)
			}
			seen := make(map[string]bool, len(toks))
			for _, tok := range toks {
				if seen[tok] {
					t.Fatalf("duplicate token %q", tok)
				}
				seen[tok] = true
			}
			if merges, ok := m["tokenizer.ggml.merges"].([]string); ok {
				for _, mg := range merges {
					l, r, _ := bytes.Cut([]byte(mg), []byte(" "))
					if !seen[string(l)] || !seen[string(r)] || !seen[string(l)+string(r)] {
						t.Fatalf("merge %q has a part or result outside the vocabulary", mg)
					}
				}
			}
		})
	}
}

func TestF16(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff},
		{float32(math.Pow(2, -24)), 0x0001}, {1e-10, 0}, {0.1, 0x2e66},
	}
	for _, c := range cases {
		if got := f16(c.in); got != c.want {
			t.Errorf("f16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := LookupShape("gpt-5"); !errors.Is(err, ErrShape) {
		t.Errorf("LookupShape: %v", err)
	}
	var w bytes.Buffer
	if err := Write(&w, Options{Shape: Shapes["stories260k"], Type: "q4_k_m"}, false); !errors.Is(err, ErrShape) {
		t.Errorf("Write q4_k_m directly: %v", err)
	}
	bad := Shapes["stories260k"]
	bad.Heads = 7
	if err := Write(&w, Options{Shape: bad}, false); !errors.Is(err, ErrShape) {
		t.Errorf("inconsistent shape: %v", err)
	}
	if err := Quantize(t.Context(), "/bin/true", "a", "b", "q9_z", 1); !errors.Is(err, ErrShape) {
		t.Errorf("unknown quant: %v", err)
	}
}
