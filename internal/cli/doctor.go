package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/ops/doctor"
	"github.com/raygw/raygw/internal/ops/hostfs"
)

func init() { register(newDoctorCmd) }

func newDoctorCmd(g *Globals) *cobra.Command {
	var root, caddy, gateway string
	var asJSON bool
	var memMiB int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that this VPS is ready to run raygw and llama-server",
		Long: `Doctor runs every readiness check (env file, auth, systemd and the generated
units, Caddy and the generated Caddyfile, service user and access, the raygw and
llama-server binaries, the GGUF and its memory fit, storage headroom, launch
profile, architecture, hidden paths, swap) and prints one line per check:

  ok|warn|fail  name  message (fix: ...)

Exit status: 0 when every check is ok, 1 when the worst is warn, 2 on any fail.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := g.Load(nil)
			if err != nil {
				return &ExitError{Code: 2, Err: err}
			}
			env := &doctor.Env{
				Host: hostfs.New(root), Config: l, EnvFile: g.EnvFile, ConfigFile: g.ConfigFile,
				CaddyBinary: caddy, GatewayBinary: gateway, MemoryMiB: memMiB, Timeout: timeout, Ctx: cmd.Context(),
			}
			rs := doctor.Run(env)
			if asJSON {
				if err := doctor.WriteJSON(cmd.OutOrStdout(), rs); err != nil {
					return err
				}
			} else {
				doctor.WriteText(cmd.OutOrStdout(), rs)
			}
			if code := doctor.ExitCode(rs); code != 0 {
				return &ExitError{Code: code, Err: fmt.Errorf("doctor: worst result %s", doctor.Worst(rs))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the results as JSON")
	f.StringVar(&root, "root", "/", "read the host from this directory tree")
	f.StringVar(&caddy, "caddy-binary", "", "caddy executable (default: RAY_DEPLOY_CADDY_BINARY, then PATH)")
	f.StringVar(&gateway, "gateway-runtime-binary", "", "raygw executable the units run (default: RAY_GATEWAY_RUNTIME_BINARY)")
	f.IntVar(&memMiB, "memory-mib", 0, "memory target in MiB (default: RAY_DEPLOY_MEMORY_MIB, else RAY_MODEL_MEMORY_CLASS_MIB)")
	f.DurationVar(&timeout, "probe-timeout", 20*time.Second, "bound on each external probe (llama-server --help, caddy, raygw version)")
	return cmd
}
