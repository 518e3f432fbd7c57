package cli

import "github.com/spf13/cobra"

// newBenchAutotuneCmd is `raygw bench autotune` (placeholder).
func newBenchAutotuneCmd(g *Globals) *cobra.Command {
	return &cobra.Command{Use: "autotune", Short: "Search launch and scheduler settings for the best workload figures", Hidden: true}
}
