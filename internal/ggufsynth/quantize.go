package ggufsynth

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"
)

// Quants maps the quantization names raygw accepts to llama_ftype numbers
// (the general.file_type of the result).
var Quants = map[string]uint32{
	"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q8_0": 7, "q5_0": 8, "q5_1": 9, "q2_k": 10,
	"q3_k_s": 11, "q3_k_m": 12, "q3_k_l": 13, "q4_k_s": 14, "q4_k_m": 15, "q5_k_s": 16, "q5_k_m": 17,
	"q6_k": 18, "iq4_nl": 25, "iq4_xs": 30, "bf16": 32,
}

// QuantNames lists Quants, sorted.
func QuantNames() []string {
	names := make([]string, 0, len(Quants))
	for n := range Quants {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Quantize runs the engine's llama-quantize on in, writing out as quant.
func Quantize(ctx context.Context, tool, in, out, quant string, threads int) error {
	q := strings.ToLower(quant)
	if _, ok := Quants[q]; !ok {
		return fmt.Errorf("%w: unknown quantization %q (known: %s)", ErrShape, quant, strings.Join(QuantNames(), ", "))
	}
	if threads <= 0 {
		threads = 2
	}
	var log bytes.Buffer
	cmd := exec.CommandContext(ctx, tool, in, out, strings.ToUpper(q), strconv.Itoa(threads))
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("llama-quantize %s: %w\n%s", strings.ToUpper(q), err, tail(log.String(), 2000))
	}
	return nil
}

// QuantizeTool finds llama-quantize: explicit, else beside llamaServer,
// else on PATH.
func QuantizeTool(explicit, llamaServer string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if llamaServer != "" {
		p := filepath.Join(filepath.Dir(llamaServer), "llama-quantize")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("llama-quantize")
	if err != nil {
		return "", fmt.Errorf("llama-quantize not found beside %q nor on PATH; pass --quantize-binary", llamaServer)
	}
	return p, nil
}

// Info is what Validate read back from a file.
type Info struct {
	Arch      string `json:"architecture"`
	Embd      uint64 `json:"n_embd"`
	Layers    uint64 `json:"n_layer"`
	Heads     uint64 `json:"n_head"`
	HeadsKV   uint64 `json:"n_head_kv"`
	FF        uint64 `json:"n_ff"`
	Vocab     uint64 `json:"n_vocab"`
	Ctx       uint64 `json:"n_ctx_train"`
	Tokenizer string `json:"tokenizer"`
	FileType  string `json:"file_type"`
	Params    uint64 `json:"parameters"`
	SizeBytes int64  `json:"size_bytes"`
}

// Validate parses path with gguf-parser-go and checks it has shape s (and
// file type ftype unless it is negative).
func Validate(path string, s Shape, ftype int) (*Info, error) {
	f, err := gguf.ParseGGUFFile(path, gguf.SkipLargeMetadata())
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	a, tk, md := f.Architecture(), f.Tokenizer(), f.Metadata()
	info := &Info{Arch: a.Architecture, Embd: a.EmbeddingLength, Layers: a.BlockCount, Heads: a.AttentionHeadCount,
		HeadsKV: a.AttentionHeadCountKV, Vocab: a.VocabularyLength, Ctx: a.MaximumContextLength,
		Tokenizer: tk.Model, FileType: md.FileType.String(), Params: uint64(md.Parameters), SizeBytes: int64(md.Size)}
	if len(a.FeedForwardLength) > 0 {
		info.FF = a.FeedForwardLength[0]
	}
	want := Info{Arch: s.Arch, Embd: uint64(s.Embd), Layers: uint64(s.Layers), Heads: uint64(s.Heads),
		HeadsKV: uint64(s.HeadsKV), FF: uint64(s.FF), Vocab: uint64(s.Vocab), Ctx: uint64(s.Ctx), Tokenizer: s.Tokenizer}
	got := *info
	got.FileType, got.Params, got.SizeBytes = "", 0, 0
	if got != want {
		return info, fmt.Errorf("%w: %s does not have shape %s: got %+v, want %+v", ErrShape, path, s.Name, got, want)
	}
	if tk.TokensLength != uint64(s.Vocab) {
		return info, fmt.Errorf("%w: %s has %d tokens, want %d", ErrShape, path, tk.TokensLength, s.Vocab)
	}
	if ftype >= 0 && uint32(md.FileType) != uint32(ftype) {
		return info, fmt.Errorf("%w: %s has file type %s, want %d", ErrShape, path, md.FileType, ftype)
	}
	return info, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
