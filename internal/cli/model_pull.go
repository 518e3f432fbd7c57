package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/engine/llamacpp"
	"github.com/raygw/raygw/internal/ops/pull"
)

func init() { registerModel(newModelPullCmd) }

func newModelPullCmd(g *Globals) *cobra.Command {
	var sha, dir, name, hfEndpoint string
	var force bool
	cmd := &cobra.Command{
		Use:   "pull URL|hf:owner/repo/file",
		Short: "Download a GGUF into the models directory (resumable, verified)",
		Long: `Pull downloads a model into --dir (default: the directory of
RAY_LLAMA_CPP_MODEL_PATH). An interrupted download leaves FILE.part and the
next pull resumes it with an HTTP Range request. The file is checked against
--sha256 when given and for a GGUF header, then renamed into place.
hf:owner/repo/file downloads {--hf-endpoint}/owner/repo/resolve/main/file.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			url, file, err := pull.Resolve(args[0], hfEndpoint)
			if err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			if dir == "" {
				l, err := g.Load(nil)
				if err != nil {
					return err
				}
				dir = filepath.Dir(llamacpp.FromConfig(l.Config).ModelPath)
			}
			if name != "" {
				file = name
			}
			dest := filepath.Join(dir, file)
			p := &pull.Puller{Progress: cmd.ErrOrStderr(), Force: force}
			if err := p.Pull(cmd.Context(), url, dest, sha); err != nil {
				return &ExitError{Code: 1, Err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pulled %s\n", dest)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sha, "sha256", "", "expected SHA-256 of the file")
	f.StringVar(&dir, "dir", "", "models directory (default: directory of RAY_LLAMA_CPP_MODEL_PATH)")
	f.StringVar(&name, "output", "", "file name to save as (default: the URL's last path element)")
	f.StringVar(&hfEndpoint, "hf-endpoint", pull.DefaultHFEndpoint, "base address for hf: references")
	f.BoolVar(&force, "force", false, "replace an existing file")
	return cmd
}
