package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/ggufsynth"
)

func init() { registerModel(newModelSynthCmd) }

func newModelSynthCmd(g *Globals) *cobra.Command {
	var shape, quant, out, quantizeBin, tmpDir string
	var seed uint64
	var threads int
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "synth",
		Short: "Write a GGUF with a real model's shape and random weights, for benchmarks",
		Long: `raygw model synth writes a GGUF whose architecture, dimensions and vocabulary size match
a real model (` + strings.Join(ggufsynth.ShapeNames(), ", ") + `), with seeded random
weights and a synthetic tokenizer. llama-server loads it and runs it at the real model's
speed and memory, so benchmarks need no downloaded weights. The output is not a useful
language model.

Types other than f32 and f16 are made by the engine's own llama-quantize: found beside
the llama-server of RAY_LLAMA_CPP_BINARY_PATH, on PATH, or given by --quantize-binary.`,
		Example: "  raygw model synth --shape llama-3.2-1b --quant q4_k_m -o /tmp/llama-1b-q4.gguf",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := ggufsynth.LookupShape(shape)
			if err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			q := strings.ToLower(quant)
			ftype, ok := ggufsynth.Quants[q]
			if !ok {
				return &ExitError{Code: 2, Err: fmt.Errorf("unknown --quant %q (known: %s)", quant,
					strings.Join(ggufsynth.QuantNames(), ", "))}
			}
			if out == "" {
				return &ExitError{Code: 2, Err: errors.New("-o FILE.gguf is required")}
			}
			w := cmd.ErrOrStderr()
			start := time.Now()
			if q == "f32" || q == "f16" {
				fmt.Fprintf(w, "writing %s (%s, %d parameters)\n", out, q, s.Params())
				if err := ggufsynth.WriteFile(out, ggufsynth.Options{Shape: s, Seed: seed, Type: q}); err != nil {
					return err
				}
			} else {
				tool, err := quantizeTool(g, quantizeBin)
				if err != nil {
					return err
				}
				if err := synthQuantized(cmd, s, seed, q, out, tool, tmpDir, threads); err != nil {
					return err
				}
			}
			info, err := ggufsynth.Validate(out, s, int(ftype))
			if err != nil {
				return err
			}
			if jsonOut {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s, n_embd %d, %d layers, %d/%d heads, ff %d, vocab %d (%s), ctx %d, %d parameters, %.1f MiB, %s\n",
				out, s.Name, info.FileType, info.Embd, info.Layers, info.Heads, info.HeadsKV, info.FF, info.Vocab,
				info.Tokenizer, info.Ctx, info.Params, float64(info.SizeBytes)/(1<<20), time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&shape, "shape", "", "model shape: "+strings.Join(ggufsynth.ShapeNames(), ", "))
	fl.StringVar(&quant, "quant", "q4_k_m", "output type: "+strings.Join(ggufsynth.QuantNames(), ", "))
	fl.StringVarP(&out, "output", "o", "", "GGUF file to write")
	fl.Uint64Var(&seed, "seed", 1, "random seed; the same seed writes the same file")
	fl.StringVar(&quantizeBin, "quantize-binary", "", "llama-quantize to use (default: beside RAY_LLAMA_CPP_BINARY_PATH, else on PATH)")
	fl.StringVar(&tmpDir, "tmp-dir", "", "directory for the F16 intermediate (default: beside the output)")
	fl.IntVar(&threads, "threads", 2, "llama-quantize threads")
	fl.BoolVar(&jsonOut, "json", false, "print what was written as JSON")
	_ = cmd.MarkFlagRequired("shape")
	return cmd
}

func quantizeTool(g *Globals, explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	server := ""
	if cfg, err := g.Load(nil); err == nil {
		server = cfg.LlamaCpp.BinaryPath
	}
	return ggufsynth.QuantizeTool("", server)
}

// synthQuantized writes an F16 intermediate, quantizes it to out and
// removes the intermediate.
func synthQuantized(cmd *cobra.Command, s ggufsynth.Shape, seed uint64, q, out, tool, tmpDir string, threads int) error {
	if tmpDir == "" {
		tmpDir = filepath.Dir(out)
	}
	f, err := os.CreateTemp(tmpDir, ".synth-f16-*.gguf")
	if err != nil {
		return err
	}
	src := f.Name()
	f.Close()
	defer os.Remove(src)
	w := cmd.ErrOrStderr()
	fmt.Fprintf(w, "writing F16 intermediate %s (%d parameters)\n", src, s.Params())
	if err := ggufsynth.WriteFile(src, ggufsynth.Options{Shape: s, Seed: seed, Type: "f16"}); err != nil {
		return err
	}
	fmt.Fprintf(w, "quantizing to %s with %s\n", q, tool)
	return ggufsynth.Quantize(cmd.Context(), tool, src, out, q, threads)
}
