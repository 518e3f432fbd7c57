package cli

import (
	"github.com/spf13/cobra"
)

func init() { register(newConfigCmd) }

func newConfigCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect raygw's configuration"}
	var asJSON bool
	print := &cobra.Command{
		Use:   "print",
		Short: "Print every setting's resolved value (secrets masked) and its source",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.Load(nil)
			if err != nil {
				return err
			}
			for _, w := range cfg.Warnings {
				cmd.PrintErrln("warning:", w)
			}
			return cfg.Print(cmd.OutOrStdout(), asJSON)
		},
	}
	print.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(print)
	return cmd
}
