package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/ops/engineprobe"
	"github.com/raygw/raygw/internal/ops/hostfs"
	"github.com/raygw/raygw/internal/ops/stage"
)

func init() { register(newStageCmd) }

func newStageCmd(g *Globals) *cobra.Command {
	var in stage.Inputs
	var commandsOnly, checkSources, apply bool
	cmd := &cobra.Command{
		Use:   "stage",
		Short: "Plan, check and (with --apply) stage the llama-server binary and the GGUF",
		Long: `Stage resolves the llama-server and GGUF sources (flags, else
RAY_LLAMA_CPP_BINARY_SOURCE_PATH / RAY_MODEL_SOURCE_PATH and their *_SHA256)
and targets (RAY_LLAMA_CPP_BINARY_PATH, RAY_LLAMA_CPP_MODEL_PATH) and prints a
summary and the reviewed shell commands. --commands-only prints only the
commands; --check-sources first verifies the sources (access, checksums, GGUF
header, --help startup, launch-flag support). --apply stages them: checksum,
headroom (64 MiB after the binary, 256 MiB after the model, at least
RAY_DEPLOY_MIN_FREE_STORAGE_MIB), copy through a same-directory .ray-stage-*
file, ownership, service-user checks, then rename over the target.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := g.Load(nil)
			if err != nil {
				return err
			}
			if in.WorkDir, err = os.Getwd(); err != nil {
				return err
			}
			plan, err := stage.NewPlan(l.Config, in)
			if err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			w := cmd.OutOrStdout()
			h := hostfs.New("/")
			st := &stage.Stager{Host: h, Log: cmd.ErrOrStderr(), Progress: cmd.ErrOrStderr(), Timeout: engineprobe.DefaultTimeout}
			if checkSources || apply {
				if err := st.CheckSources(cmd.Context(), plan); err != nil {
					return &ExitError{Code: 1, Err: fmt.Errorf("source check: %w", err)}
				}
			}
			if apply {
				u, err := h.LookupUser(plan.User)
				if err != nil {
					return &ExitError{Code: 1, Err: fmt.Errorf("RAY_DEPLOY_SERVICE_USER: %w", err)}
				}
				if err := st.Apply(cmd.Context(), plan, u); err != nil {
					return &ExitError{Code: 1, Err: err}
				}
				return nil
			}
			if !commandsOnly {
				stage.WriteSummary(w, plan, h)
			}
			fmt.Fprint(w, plan.Commands())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&in.BinarySource, "binary-source", "", "llama-server to stage (default RAY_LLAMA_CPP_BINARY_SOURCE_PATH)")
	f.StringVar(&in.BinarySHA256, "binary-sha256", "", "expected SHA-256 of the llama-server source")
	f.StringVar(&in.ModelSource, "source", "", "GGUF to stage (default RAY_MODEL_SOURCE_PATH)")
	f.StringVar(&in.ModelSHA256, "sha256", "", "expected SHA-256 of the GGUF source")
	f.BoolVar(&commandsOnly, "commands-only", false, "print only the reviewed shell commands")
	f.BoolVar(&checkSources, "check-sources", false, "verify the sources before printing the plan")
	f.BoolVar(&apply, "apply", false, "stage the artifacts into their targets")
	return cmd
}
