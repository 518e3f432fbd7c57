package cli

import "github.com/spf13/cobra"

var modelConstructors []func(*Globals) *cobra.Command

// registerModel adds a `raygw model <sub>` constructor; files call it from init.
func registerModel(f func(*Globals) *cobra.Command) { modelConstructors = append(modelConstructors, f) }

func init() { register(newModelCmd) }

func newModelCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{Use: "model", Short: "Work with GGUF model files"}
	for _, c := range modelConstructors {
		cmd.AddCommand(c(g))
	}
	return cmd
}
