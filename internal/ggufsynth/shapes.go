// Package ggufsynth owns synthetic GGUF models: files whose architecture,
// dimensions and vocabulary size match a real model (llama-3.2-1b,
// qwen2.5-0.5b, ...) but whose weights are seeded random numbers and whose
// tokenizer is a made-up SentencePiece or GPT-2 BPE vocabulary. They load in
// llama-server and run at the real model's speed and memory, which is what
// benchmarks need, without downloading weights.
package ggufsynth

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Tokenizer kinds.
const (
	TokenizerSPM = "llama" // SentencePiece-style, scores, byte fallback
	TokenizerBPE = "gpt2"  // GPT-2 byte-level BPE with merges
)

// Shape is a model's architecture and dimensions.
type Shape struct {
	Name         string
	Arch         string // GGUF general.architecture: llama or qwen2
	Embd         int    // n_embd
	Layers       int    // block_count
	Heads        int    // attention.head_count
	HeadsKV      int    // attention.head_count_kv
	FF           int    // feed_forward_length
	Vocab        int
	Ctx          int // context_length (n_ctx_train)
	RopeDim      int // rope.dimension_count (llama)
	RopeFreqBase float32
	RMSEps       float32
	// TiedEmbeddings means no output.weight: the token embedding is reused.
	TiedEmbeddings bool
	// QKVBias adds attn_q/k/v biases (qwen2).
	QKVBias   bool
	Tokenizer string
	// PreTokenizer is tokenizer.ggml.pre for BPE vocabularies.
	PreTokenizer string
}

// Shapes are the built-in shapes, by name.
var Shapes = map[string]Shape{
	"llama-3.2-1b": {Name: "llama-3.2-1b", Arch: "llama", Embd: 2048, Layers: 16, Heads: 32, HeadsKV: 8, FF: 8192,
		Vocab: 128256, Ctx: 131072, RopeDim: 64, RopeFreqBase: 500000, RMSEps: 1e-5, TiedEmbeddings: true,
		Tokenizer: TokenizerSPM},
	"qwen2.5-0.5b": {Name: "qwen2.5-0.5b", Arch: "qwen2", Embd: 896, Layers: 24, Heads: 14, HeadsKV: 2, FF: 4864,
		Vocab: 151936, Ctx: 32768, RopeFreqBase: 1000000, RMSEps: 1e-6, TiedEmbeddings: true, QKVBias: true,
		Tokenizer: TokenizerBPE, PreTokenizer: "qwen2"},
	"qwen2.5-1.5b": {Name: "qwen2.5-1.5b", Arch: "qwen2", Embd: 1536, Layers: 28, Heads: 12, HeadsKV: 2, FF: 8960,
		Vocab: 151936, Ctx: 32768, RopeFreqBase: 1000000, RMSEps: 1e-6, TiedEmbeddings: true, QKVBias: true,
		Tokenizer: TokenizerBPE, PreTokenizer: "qwen2"},
	"stories260k": {Name: "stories260k", Arch: "llama", Embd: 64, Layers: 5, Heads: 8, HeadsKV: 4, FF: 172,
		Vocab: 512, Ctx: 2048, RopeDim: 8, RopeFreqBase: 10000, RMSEps: 1e-5, Tokenizer: TokenizerSPM},
}

// ShapeNames lists the built-in shapes, sorted.
func ShapeNames() []string {
	names := make([]string, 0, len(Shapes))
	for n := range Shapes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupShape returns a built-in shape or an error listing the known ones.
func LookupShape(name string) (Shape, error) {
	s, ok := Shapes[strings.ToLower(name)]
	if !ok {
		return Shape{}, fmt.Errorf("%w: unknown shape %q (known: %s)", ErrShape, name, strings.Join(ShapeNames(), ", "))
	}
	return s, nil
}

// HeadDim is the size of one attention head.
func (s Shape) HeadDim() int { return s.Embd / s.Heads }

// tensors lays out the model's tensors in llama.cpp's names and GGUF order
// of dimensions (ne0 = input features).
func (s Shape) tensors(big uint32) []tensor {
	e, kvDim, qDim := uint64(s.Embd), uint64(s.HeadsKV*s.HeadDim()), uint64(s.Heads*s.HeadDim())
	ff, v := uint64(s.FF), uint64(s.Vocab)
	w := func(name string, in, out uint64) tensor {
		return tensor{name: name, dims: []uint64{in, out}, typ: big, scale: initScale(in)}
	}
	norm := func(name string) tensor { return tensor{name: name, dims: []uint64{e}, typ: ggmlF32} }
	bias := func(name string, n uint64) tensor {
		return tensor{name: name, dims: []uint64{n}, typ: ggmlF32, scale: 0.02}
	}
	ts := []tensor{w("token_embd.weight", e, v), norm("output_norm.weight")}
	if !s.TiedEmbeddings {
		ts = append(ts, w("output.weight", e, v))
	}
	for i := range s.Layers {
		p := fmt.Sprintf("blk.%d.", i)
		ts = append(ts, norm(p+"attn_norm.weight"), w(p+"attn_q.weight", e, qDim), w(p+"attn_k.weight", e, kvDim),
			w(p+"attn_v.weight", e, kvDim), w(p+"attn_output.weight", qDim, e))
		if s.QKVBias {
			ts = append(ts, bias(p+"attn_q.bias", qDim), bias(p+"attn_k.bias", kvDim), bias(p+"attn_v.bias", kvDim))
		}
		ts = append(ts, norm(p+"ffn_norm.weight"), w(p+"ffn_gate.weight", e, ff), w(p+"ffn_down.weight", ff, e),
			w(p+"ffn_up.weight", e, ff))
	}
	return ts
}

// Params is the number of weights the shape has.
func (s Shape) Params() uint64 {
	var n uint64
	for _, t := range s.tensors(ggmlF32) {
		n += t.elems()
	}
	return n
}

// initScale keeps activations bounded: uniform(-a, a) with a = 1/sqrt(in).
func initScale(in uint64) float32 { return float32(1 / math.Sqrt(float64(in))) }
