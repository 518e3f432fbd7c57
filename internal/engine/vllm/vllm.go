// Package vllm owns what raygw knows about vLLM: the fields of a model's
// vllm_config.json, merging them with a deployment's overrides, and the
// exact `vllm serve` command line. vLLM itself is an OpenAI-compatible
// upstream and is reached with internal/engine/openaicompat.
package vllm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// ConfigFile is the name of the per-model settings file in the model path.
const ConfigFile = "vllm_config.json"

// LoRAModule is one adapter registered at start.
type LoRAModule struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// Config holds the vllm_config.json fields. A nil pointer means "not set":
// vLLM's own default applies.
type Config struct {
	Quantization         *string      `json:"quantization,omitempty"`
	GPUMemoryUtilization *float64     `json:"gpu_memory_utilization,omitempty"`
	MaxModelLen          *int         `json:"max_model_len,omitempty"`
	MaxNumBatchedTokens  *int         `json:"max_num_batched_tokens,omitempty"`
	Dtype                *string      `json:"dtype,omitempty"`
	TensorParallelSize   *int         `json:"tensor_parallel_size,omitempty"`
	SwapSpace            *float64     `json:"swap_space,omitempty"`
	EnableLoRA           *bool        `json:"enable_lora,omitempty"`
	MaxLoRAs             *int         `json:"max_loras,omitempty"`
	MaxLoRARank          *int         `json:"max_lora_rank,omitempty"`
	LoRAExtraVocabSize   *int         `json:"lora_extra_vocab_size,omitempty"`
	LoRAModules          []LoRAModule `json:"lora_modules,omitempty"`
}

// ReadDir reads vllm_config.json from a model directory. A missing file is
// an empty Config; a malformed one is an error naming the file.
func ReadDir(modelPath string) (Config, error) {
	var c Config
	b, err := os.ReadFile(filepath.Join(modelPath, ConfigFile))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) || isNotDir(err) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", filepath.Join(modelPath, ConfigFile), err)
	}
	return c, nil
}

// Merge returns base with every field set in over replacing it.
func Merge(base, over Config) Config {
	out := base
	pick := func(dst **int, v *int) {
		if v != nil {
			*dst = v
		}
	}
	if over.Quantization != nil {
		out.Quantization = over.Quantization
	}
	if over.GPUMemoryUtilization != nil {
		out.GPUMemoryUtilization = over.GPUMemoryUtilization
	}
	pick(&out.MaxModelLen, over.MaxModelLen)
	pick(&out.MaxNumBatchedTokens, over.MaxNumBatchedTokens)
	if over.Dtype != nil {
		out.Dtype = over.Dtype
	}
	pick(&out.TensorParallelSize, over.TensorParallelSize)
	if over.SwapSpace != nil {
		out.SwapSpace = over.SwapSpace
	}
	if over.EnableLoRA != nil {
		out.EnableLoRA = over.EnableLoRA
	}
	pick(&out.MaxLoRAs, over.MaxLoRAs)
	pick(&out.MaxLoRARank, over.MaxLoRARank)
	pick(&out.LoRAExtraVocabSize, over.LoRAExtraVocabSize)
	if over.LoRAModules != nil {
		out.LoRAModules = over.LoRAModules
	}
	return out
}

// Serve is one `vllm serve` process.
type Serve struct {
	Binary          string // default "vllm"
	ModelPath       string
	ServedModelName string
	Host            string
	Port            int
	Config          Config
}

// Argv renders the exact command line, binary first. Unset fields are left
// to vLLM's defaults; quantization null means no flag.
func (s Serve) Argv() []string {
	bin := s.Binary
	if bin == "" {
		bin = "vllm"
	}
	c := s.Config
	argv := []string{bin, "serve", s.ModelPath,
		"--served-model-name", s.ServedModelName,
		"--host", s.Host,
		"--port", strconv.Itoa(s.Port),
	}
	intFlag := func(flag string, v *int) {
		if v != nil {
			argv = append(argv, flag, strconv.Itoa(*v))
		}
	}
	intFlag("--tensor-parallel-size", c.TensorParallelSize)
	if c.Quantization != nil && *c.Quantization != "" {
		argv = append(argv, "--quantization", *c.Quantization)
	}
	if c.GPUMemoryUtilization != nil {
		argv = append(argv, "--gpu-memory-utilization", strconv.FormatFloat(*c.GPUMemoryUtilization, 'f', -1, 64))
	}
	intFlag("--max-model-len", c.MaxModelLen)
	intFlag("--max-num-batched-tokens", c.MaxNumBatchedTokens)
	if c.Dtype != nil {
		argv = append(argv, "--dtype", *c.Dtype)
	}
	if c.SwapSpace != nil {
		argv = append(argv, "--swap-space", strconv.FormatFloat(*c.SwapSpace, 'f', -1, 64))
	}
	if c.EnableLoRA != nil && *c.EnableLoRA {
		argv = append(argv, "--enable-lora")
		intFlag("--max-loras", c.MaxLoRAs)
		intFlag("--max-lora-rank", c.MaxLoRARank)
		intFlag("--lora-extra-vocab-size", c.LoRAExtraVocabSize)
		if len(c.LoRAModules) > 0 {
			argv = append(argv, "--lora-modules")
			for _, m := range c.LoRAModules {
				argv = append(argv, m.Name+"="+m.Path)
			}
		}
	}
	return argv
}
