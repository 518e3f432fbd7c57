// Package cli owns raygw's command line: the root command, the flags shared
// by every subcommand, and configuration loading for them.
package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/config"
)

// Globals are the flags every subcommand shares.
type Globals struct {
	EnvFile    string
	ConfigFile string
	Profile    string
}

// Load resolves the configuration for a subcommand. flags holds RAY_* values
// set by that subcommand's own flags (highest precedence).
func (g *Globals) Load(flags map[string]string) (*config.Loaded, error) {
	f := map[string]string{}
	if g.Profile != "" {
		f["RAY_PROFILE"] = g.Profile
	}
	for k, v := range flags {
		f[k] = v
	}
	return config.Load(config.Options{ConfigFile: g.ConfigFile, EnvFile: g.EnvFile, Environ: os.Environ(), Flags: f})
}

var constructors []func(*Globals) *cobra.Command

// register adds a subcommand constructor; files of this package call it from init.
func register(f func(*Globals) *cobra.Command) { constructors = append(constructors, f) }

// NewRoot builds the root command with every registered subcommand.
func NewRoot() *cobra.Command {
	g := &Globals{}
	root := &cobra.Command{
		Use:           "raygw",
		Short:         "raygw serves LLMs: an OpenAI-compatible gateway for llama.cpp and a model-serving control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&g.EnvFile, "ray-env-file", "", "read RAY_* settings from this KEY=VALUE file (never run by a shell)")
	pf.StringVar(&g.ConfigFile, "config", "", "read RAY_* settings from this JSON file")
	pf.StringVar(&g.Profile, "profile", "", "machine-class profile: 1b (4 GB) or 1b-8gb (8 GB)")
	for _, c := range constructors {
		root.AddCommand(c(g))
	}
	return root
}

// Run executes the command line and returns the process exit code.
func Run(ctx context.Context, args []string) int {
	root := NewRoot()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		var ec interface{ ExitCode() int }
		fmt.Fprintln(os.Stderr, "raygw:", err)
		if asExit(err, &ec) {
			return ec.ExitCode()
		}
		return 1
	}
	return 0
}
