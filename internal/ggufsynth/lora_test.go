package ggufsynth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	gguf "github.com/gpustack/gguf-parser-go"

	"github.com/raygw/raygw/internal/testenv"
)

// storiesLoRAParams is (in+out)*r summed over the 35 default targets of the
// stories model (5 blocks: q, o 64x64; k, v 64x32; gate, up, down 64x172) at r = 8.
const storiesLoRAParams = 5 * 8 * (2*(64+64) + 2*(64+32) + 3*(64+172))

func TestLoRAWritesWhatLlamaCppExpects(t *testing.T) {
	model := testenv.Model(t)
	base, err := gguf.ParseGGUFFile(model, gguf.SkipLargeMetadata())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		opt     LoRAOptions
		pairs   int
		rank    uint64
		alpha   float32
		params  uint64
		targets []string
	}{
		{"defaults", LoRAOptions{Seed: 1}, 35, 8, 8, storiesLoRAParams, DefaultLoRATargets},
		{"rank 4 alpha 16", LoRAOptions{Seed: 1, Rank: 4, Alpha: 16}, 35, 4, 16, storiesLoRAParams / 2, DefaultLoRATargets},
		{"q and output only", LoRAOptions{Seed: 1, Targets: []string{"attn_q", "output"}}, 6, 8, 8,
			5*8*(64+64) + 8*(64+512), []string{"attn_q", "output"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "adapter.gguf")
			info, err := LoRA(model, out, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			f, err := gguf.ParseGGUFFile(out)
			if err != nil {
				t.Fatalf("gguf-parser-go cannot read the adapter: %v", err)
			}
			checkLoRAMetadata(t, f, c.alpha)
			if got := len(f.TensorInfos); got != 2*c.pairs || len(info.Weights) != c.pairs {
				t.Fatalf("%d tensors, %d weights; want %d pairs", got, len(info.Weights), c.pairs)
			}
			checkLoRAShapes(t, f, base, c.rank, c.targets)
			st, _ := os.Stat(out)
			if info.Params != c.params || info.SizeBytes != st.Size() || int64(f.Size) != st.Size() {
				t.Errorf("params %d (want %d), size %d, gguf-parser size %d, file %d", info.Params, c.params,
					info.SizeBytes, f.Size, st.Size())
			}
			if data := st.Size() - f.TensorDataStartOffset; data != int64(4*c.params) {
				t.Errorf("tensor data is %d bytes, want 4*params = %d (F32, 32-byte aligned)", data, 4*c.params)
			}
			checkLoRAValues(t, out, f, c.opt)
		})
	}
}

func checkLoRAMetadata(t *testing.T, f *gguf.GGUFFile, alpha float32) {
	t.Helper()
	kvs := f.Header.MetadataKV
	for key, want := range map[string]any{"general.architecture": "llama", "general.type": "adapter",
		"adapter.type": "lora", "adapter.lora.alpha": alpha} {
		kv, ok := kvs.Get(key)
		if !ok {
			t.Errorf("%s missing", key)
			continue
		}
		if kv.Value != want {
			t.Errorf("%s = %v (%T), want %v (%T)", key, kv.Value, kv.Value, want, want)
		}
	}
	if a := f.Architecture(); a.Type != "adapter" || a.AdapterType != "lora" || a.AdapterLoRAAlpha != alpha {
		t.Errorf("gguf-parser-go sees type %q adapter %q alpha %g", a.Type, a.AdapterType, a.AdapterLoRAAlpha)
	}
}

// checkLoRAShapes checks every pair against its base weight W [in, out]:
// W.lora_a is [in, r] and W.lora_b is [r, out], both F32, and that exactly
// the targeted weights have a pair.
func checkLoRAShapes(t *testing.T, f, base *gguf.GGUFFile, r uint64, targets []string) {
	t.Helper()
	var want, got []string
	for _, w := range base.TensorInfos {
		if _, ok := loraTarget(w.Name, targets); ok {
			want = append(want, w.Name)
		}
	}
	for _, ti := range f.TensorInfos {
		if ti.Type != gguf.GGMLTypeF32 {
			t.Errorf("%s is %s, want F32", ti.Name, ti.Type)
		}
		name, isA := strings.CutSuffix(ti.Name, ".lora_a")
		if !isA {
			name, _ = strings.CutSuffix(ti.Name, ".lora_b")
		}
		w, ok := base.TensorInfos.Get(name)
		if !ok {
			t.Fatalf("%s has no base weight %s", ti.Name, name)
		}
		in, out := w.Dimensions[0], w.Dimensions[1]
		wantDims := []uint64{r, out}
		if isA {
			wantDims = []uint64{in, r}
			got = append(got, name)
		}
		if !cmp.Equal(ti.Dimensions, wantDims) {
			t.Errorf("%s dims %v, want %v (base %v)", ti.Name, ti.Dimensions, wantDims, w.Dimensions)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("targeted weights (-base +adapter):\n%s", diff)
	}
}

// checkLoRAValues reads every tensor back: A is uniform within 1/sqrt(in),
// B within strength/sqrt(r), and neither is all zeros.
func checkLoRAValues(t *testing.T, path string, f *gguf.GGUFFile, o LoRAOptions) {
	t.Helper()
	o, _ = o.withDefaults()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ti := range f.TensorInfos {
		limit := o.Strength * initScale(ti.Dimensions[0])
		if strings.HasSuffix(ti.Name, ".lora_a") {
			limit = initScale(ti.Dimensions[0])
		}
		start := uint64(f.TensorDataStartOffset) + ti.Offset
		var absMax float32
		for i := range ti.Elements() {
			v := math.Float32frombits(binary.LittleEndian.Uint32(raw[start+4*i:]))
			absMax = max(absMax, float32(math.Abs(float64(v))))
		}
		if absMax == 0 || absMax > limit {
			t.Fatalf("%s: largest |value| %g, want in (0, %g]", ti.Name, absMax, limit)
		}
	}
}

func TestLoRAIsReproducible(t *testing.T) {
	model := testenv.Model(t)
	dir := t.TempDir()
	write := func(name string, seed uint64) []byte {
		p := filepath.Join(dir, name)
		if _, err := LoRA(model, p, LoRAOptions{Seed: seed}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := write("a.gguf", 7), write("b.gguf", 7), write("c.gguf", 8)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different bytes")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same bytes")
	}
}

func TestLoRAErrors(t *testing.T) {
	model := testenv.Model(t)
	dir := t.TempDir()
	adapter := filepath.Join(dir, "adapter.gguf")
	if _, err := LoRA(model, adapter, LoRAOptions{}); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "no-such-model.gguf")
	cases := []struct {
		name, base string
		opt        LoRAOptions
		contains   string
	}{
		{"missing base", missing, LoRAOptions{}, missing},
		{"base is not a GGUF", "/etc/hostname", LoRAOptions{}, "read base model /etc/hostname"},
		{"base is an adapter", adapter, LoRAOptions{}, "is an adapter, not a base model"},
		{"negative rank", model, LoRAOptions{Rank: -1}, "rank -1"},
		{"negative strength", model, LoRAOptions{Strength: -1}, "must be positive"},
		{"unknown target", model, LoRAOptions{Targets: []string{"attn_qkv"}}, `target "attn_qkv" matches no 2-D weight`},
		{"a norm is not a matrix", model, LoRAOptions{Targets: []string{"attn_norm"}}, "a LoRA target must be a matrix"},
		{"token_embd", model, LoRAOptions{Targets: []string{"token_embd"}}, "token_embd is not supported"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "out.gguf")
			_, err := LoRA(c.base, out, c.opt)
			if !errors.Is(err, ErrLoRA) || !strings.Contains(err.Error(), c.contains) {
				t.Fatalf("err = %v, want ErrLoRA mentioning %q", err, c.contains)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a failed LoRA left %s behind (%v)", out, err)
			}
		})
	}
	if _, err := LoRA(model, filepath.Join(dir, "no-such-dir", "out.gguf"), LoRAOptions{}); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}
