package ggufsynth

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	gguf "github.com/gpustack/gguf-parser-go"
)

// ErrLoRA marks a base model or option LoRA cannot build an adapter from.
var ErrLoRA = errors.New("ggufsynth lora")

// DefaultLoRATargets are the per-block weights an adapter targets unless
// LoRAOptions.Targets says otherwise: attention q/k/v/output and the FFN.
var DefaultLoRATargets = []string{"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}

// LoRAOptions choose the adapter LoRA writes.
type LoRAOptions struct {
	// Rank is r, the inner dimension of each A/B pair (default 8).
	Rank int
	// Alpha is adapter.lora.alpha; llama.cpp scales B·A by alpha/rank
	// (default: Rank, a factor of 1).
	Alpha float32
	// Seed makes the values reproducible: same base, options and seed, same bytes.
	Seed uint64
	// Targets are weight names without the "blk.N." prefix and ".weight"
	// suffix ("attn_q", "ffn_down", "output"); default DefaultLoRATargets.
	// Each must match at least one 2-D weight of the base.
	Targets []string
	// Strength multiplies the magnitude of B (default 1). At 1 (and alpha =
	// rank) the update B·A has about 0.6 times the spread of a freshly
	// initialised weight, which changes the stories model's greedy output
	// from the first tokens.
	Strength float32
}

// LoRAInfo describes a written adapter.
type LoRAInfo struct {
	Arch      string   `json:"architecture"`
	Rank      int      `json:"rank"`
	Alpha     float32  `json:"alpha"`
	Weights   []string `json:"weights"` // targeted base weights, in file order
	Params    uint64   `json:"parameters"`
	SizeBytes int64    `json:"size_bytes"`
}

func (o LoRAOptions) withDefaults() (LoRAOptions, error) {
	if o.Rank == 0 {
		o.Rank = 8
	}
	if o.Rank < 1 {
		return o, fmt.Errorf("%w: rank %d must be at least 1", ErrLoRA, o.Rank)
	}
	if o.Alpha == 0 {
		o.Alpha = float32(o.Rank)
	}
	if o.Strength == 0 {
		o.Strength = 1
	}
	if o.Alpha < 0 || o.Strength < 0 || math.IsNaN(float64(o.Alpha)) || math.IsNaN(float64(o.Strength)) {
		return o, fmt.Errorf("%w: alpha %g and strength %g must be positive", ErrLoRA, o.Alpha, o.Strength)
	}
	if len(o.Targets) == 0 {
		o.Targets = DefaultLoRATargets
	}
	return o, nil
}

// LoRA reads the base model at base and writes to out a LoRA adapter GGUF
// that llama.cpp's --lora accepts for it: general.type "adapter",
// adapter.type "lora", the base's architecture, and for every targeted
// weight W with GGUF dims [in, out] the F32 pair W.lora_a [in, r] and
// W.lora_b [r, out] holding seeded uniform values. The file is written
// through a temporary file renamed into place when complete.
func LoRA(base, out string, opt LoRAOptions) (LoRAInfo, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return LoRAInfo{}, err
	}
	arch, weights, err := loraBase(base)
	if err != nil {
		return LoRAInfo{}, err
	}
	ts, info, err := loraTensors(arch, weights, opt)
	if err != nil {
		return LoRAInfo{}, fmt.Errorf("%s: %w", base, err)
	}
	n, err := writeAtomic(out, func(w io.Writer) error { return writeLoRA(w, info, ts, opt) })
	info.SizeBytes = n
	return info, err
}

// loraBase reads the base's architecture and its 2-D weights.
func loraBase(base string) (string, gguf.GGUFTensorInfos, error) {
	f, err := gguf.ParseGGUFFile(base, gguf.SkipLargeMetadata())
	if err != nil {
		return "", nil, fmt.Errorf("%w: read base model %s: %w", ErrLoRA, base, err)
	}
	kvs := f.Header.MetadataKV
	if kv, ok := kvs.Get("general.type"); ok && kv.ValueType == gguf.GGUFMetadataValueTypeString &&
		kv.ValueString() == "adapter" {
		return "", nil, fmt.Errorf("%w: %s is an adapter, not a base model", ErrLoRA, base)
	}
	kv, ok := kvs.Get("general.architecture")
	if !ok || kv.ValueType != gguf.GGUFMetadataValueTypeString || kv.ValueString() == "" {
		return "", nil, fmt.Errorf("%w: %s has no general.architecture", ErrLoRA, base)
	}
	return kv.ValueString(), f.TensorInfos, nil
}

// loraTensors lays out the A/B pairs for the targeted weights, in the
// base's tensor order.
func loraTensors(arch string, weights gguf.GGUFTensorInfos, o LoRAOptions) ([]tensor, LoRAInfo, error) {
	info := LoRAInfo{Arch: arch, Rank: o.Rank, Alpha: o.Alpha}
	hit := make(map[string]bool, len(o.Targets))
	r := uint64(o.Rank)
	var ts []tensor
	for _, w := range weights {
		target, ok := loraTarget(w.Name, o.Targets)
		if !ok {
			continue
		}
		if target == "token_embd" {
			return nil, info, fmt.Errorf("%w: token_embd is not supported (llama.cpp lays its pair out transposed)", ErrLoRA)
		}
		if len(w.Dimensions) != 2 {
			return nil, info, fmt.Errorf("%w: %s has %d dimensions; a LoRA target must be a matrix", ErrLoRA, w.Name, len(w.Dimensions))
		}
		in, out := w.Dimensions[0], w.Dimensions[1]
		hit[target] = true
		info.Weights = append(info.Weights, w.Name)
		ts = append(ts,
			tensor{name: w.Name + ".lora_a", dims: []uint64{in, r}, typ: ggmlF32, scale: initScale(in)},
			tensor{name: w.Name + ".lora_b", dims: []uint64{r, out}, typ: ggmlF32, scale: o.Strength * initScale(r)})
		info.Params += (in + out) * r
	}
	for _, t := range o.Targets {
		if !hit[t] {
			return nil, info, fmt.Errorf("%w: target %q matches no 2-D weight of the base model", ErrLoRA, t)
		}
	}
	return ts, info, nil
}

var blockWeight = regexp.MustCompile(`^blk\.[0-9]+\.(.+)\.weight$`)

// loraTarget reports which target, if any, the base tensor name is:
// "blk.N.<target>.weight" or "<target>.weight".
func loraTarget(name string, targets []string) (string, bool) {
	t, ok := strings.CutSuffix(name, ".weight")
	if m := blockWeight.FindStringSubmatch(name); m != nil {
		t = m[1]
	}
	if !ok || !slices.Contains(targets, t) {
		return "", false
	}
	return t, true
}

// writeLoRA streams the adapter GGUF: metadata, tensor infos, then the
// seeded A/B values (each tensor its own stream, as in Write).
func writeLoRA(w io.Writer, info LoRAInfo, ts []tensor, o LoRAOptions) error {
	kvs := []kv{
		{"general.architecture", info.Arch},
		{"general.type", "adapter"},
		{"general.name", fmt.Sprintf("raygw synthetic lora r%d seed %d", o.Rank, o.Seed)},
		{"general.description", "random LoRA weights for tests; written by raygw model synth-lora"},
		{"adapter.type", "lora"},
		{"adapter.lora.alpha", o.Alpha},
	}
	return writeFile(w, kvs, ts, o.Seed, false)
}

// writeAtomic writes path (mode 0644, readable by an engine running as
// another user) through a temporary file in the same directory, renamed
// into place only when write succeeded; it returns the size.
func writeAtomic(path string, write func(io.Writer) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".synth-lora-*.gguf")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	cw := &countWriter{}
	if err := write(io.MultiWriter(tmp, cw)); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	return cw.n, os.Rename(tmp.Name(), path)
}
