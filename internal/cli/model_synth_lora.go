package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/ggufsynth"
)

func init() { registerModel(newModelSynthLoRACmd) }

func newModelSynthLoRACmd(_ *Globals) *cobra.Command {
	var base, out string
	var opt ggufsynth.LoRAOptions
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "synth-lora",
		Short: "Write a LoRA adapter GGUF with random weights for a base model, for tests",
		Long: `raygw model synth-lora reads a base GGUF and writes a LoRA adapter for it that
llama-server's --lora accepts (and so a deployment's engine_config.lora_modules): for each
targeted weight W of the base, an F32 pair W.lora_a and W.lora_b of rank --rank, filled
with seeded random values. The same base, options and seed write the same file. The
adapter is not a fine-tune; it visibly changes the model's output, which is what tests of
per-request adapter selection need.`,
		Example: "  raygw model synth-lora --base stories260K.gguf --out /tmp/one.gguf --seed 1",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if base == "" || out == "" {
				return &ExitError{Code: 2, Err: errors.New("--base MODEL.gguf and --out ADAPTER.gguf are required")}
			}
			info, err := ggufsynth.LoRA(base, out, opt)
			if errors.Is(err, ggufsynth.ErrLoRA) {
				return &ExitError{Code: 2, Err: err}
			}
			if err != nil {
				return err
			}
			if jsonOut {
				return writeJSON(cmd.OutOrStdout(), info)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: LoRA adapter for %s, rank %d, alpha %g, %d weights, %d parameters, %.1f KiB\n",
				out, info.Arch, info.Rank, info.Alpha, len(info.Weights), info.Params, float64(info.SizeBytes)/1024)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&base, "base", "", "base model GGUF the adapter is for")
	fl.StringVarP(&out, "out", "o", "", "adapter GGUF file to write")
	fl.IntVar(&opt.Rank, "rank", 8, "LoRA rank r")
	fl.Float32Var(&opt.Alpha, "alpha", 0, "adapter.lora.alpha; llama.cpp scales B·A by alpha/rank (default: the rank)")
	fl.Uint64Var(&opt.Seed, "seed", 1, "random seed; the same seed writes the same file")
	fl.Float32Var(&opt.Strength, "strength", 1, "magnitude of the update; 1 changes a small model's greedy output")
	fl.StringSliceVar(&opt.Targets, "targets", nil,
		"weights to adapt, without blk.N. and .weight (default "+strings.Join(ggufsynth.DefaultLoRATargets, ",")+")")
	fl.BoolVar(&jsonOut, "json", false, "print what was written as JSON")
	return cmd
}
