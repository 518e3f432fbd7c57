package cli

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/config"
	"github.com/raygw/raygw/internal/ops/swap"
)

func init() { register(newSwapPlanCmd) }

func newSwapPlanCmd(g *Globals) *cobra.Command {
	p := swap.Plan{}
	var minFree int
	var apply bool
	cmd := &cobra.Command{
		Use:   "swap-plan",
		Short: "Print guarded commands that add a swap file and persist vm.swappiness",
		Long: `swap-plan prints a bash script that creates a swap file (1 GiB by default)
through a same-directory temporary file, removed if any step fails, only when
its filesystem keeps a free-space cushion afterwards (--min-free-after-mib, else
RAY_DEPLOY_MIN_FREE_STORAGE_MIB when set in the env file, config or
environment, else 512 MiB), and persists vm.swappiness in /etc/sysctl.d.
With --sysctl-only it prints only the swappiness part. --apply runs the script.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := g.Load(nil)
			if err != nil {
				return err
			}
			p.MinFreeAfterMiB = swapCushion(l, cmd.Flags().Changed("min-free-after-mib"), minFree)
			script, err := p.Script()
			if err != nil {
				return err
			}
			if !apply {
				fmt.Fprint(cmd.OutOrStdout(), script)
				return nil
			}
			run := exec.CommandContext(cmd.Context(), "bash", "-c", script)
			run.Stdout, run.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := run.Run(); err != nil {
				return &ExitError{Code: 1, Err: fmt.Errorf("swap-plan --apply: %w", err)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.SwapFile, "swap-file", swap.DefaultSwapFile, "swap file path")
	f.IntVar(&p.SizeMiB, "size-mib", swap.DefaultSizeMiB, "swap file size in MiB")
	f.IntVar(&minFree, "min-free-after-mib", swap.DefaultMinFreeAfter, "free space the swap file's filesystem must keep afterwards")
	f.IntVar(&p.Swappiness, "swappiness", swap.DefaultSwappiness, "vm.swappiness to persist")
	f.BoolVar(&p.SysctlOnly, "sysctl-only", false, "only persist and apply vm.swappiness")
	f.BoolVar(&apply, "apply", false, "run the script instead of printing it (root only)")
	return cmd
}

// swapCushion picks the post-swap free-space cushion: the flag when given,
// else RAY_DEPLOY_MIN_FREE_STORAGE_MIB when set outside the profile defaults.
func swapCushion(l *config.Loaded, flagSet bool, flagVal int) int {
	if flagSet {
		return flagVal
	}
	if src := l.Sources["RAY_DEPLOY_MIN_FREE_STORAGE_MIB"]; src != "" && !strings.EqualFold(src, config.SourceProfile) {
		return l.Deploy.MinFreeStorageMiB
	}
	return swap.DefaultMinFreeAfter
}
