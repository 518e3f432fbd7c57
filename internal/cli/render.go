package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/ops/render"
	"github.com/raygw/raygw/internal/ops/shell"
)

func init() { register(newRenderCmd) }

func newRenderCmd(g *Globals) *cobra.Command {
	var out string
	var stdout bool
	var memMiB int
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Render the systemd units, Caddyfile and ray.env.example for this profile",
		Long: `Render writes ray-gateway.service, ray-llama.service, Caddyfile and
ray.env.example for the resolved configuration into --out (or prints them with
--stdout), then prints the commands that install them. It changes nothing on
the host itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := g.Load(nil)
			if err != nil {
				return err
			}
			envFile := g.EnvFile
			if envFile == "" {
				envFile = render.DefaultEnvFile
			}
			files, err := render.All(l.Config, render.Options{EnvFile: envFile, MemoryMiB: memMiB})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if stdout {
				for _, f := range files {
					fmt.Fprintf(w, "==> %s <==\n%s\n", f.Name, f.Content)
				}
				return nil
			}
			if err := render.WriteFiles(out, files); err != nil {
				return err
			}
			fmt.Fprintf(w, "# wrote %d files to %s; review them, then install with:\n", len(files), out)
			for _, line := range installCommands(out, envFile) {
				fmt.Fprintln(w, line)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", filepath.Join("deploy", "rendered"), "directory to write the rendered files into")
	cmd.Flags().BoolVar(&stdout, "stdout", false, "print the rendered files instead of writing them")
	cmd.Flags().IntVar(&memMiB, "memory-mib", 0, "memory target in MiB (default: RAY_DEPLOY_MEMORY_MIB, else RAY_MODEL_MEMORY_CLASS_MIB)")
	return cmd
}

func installCommands(dir, envFile string) []string {
	q := shell.Quote
	return []string{
		"sudo install -m 0644 -o root -g root " + q(filepath.Join(dir, render.GatewayUnitName)) + " " + q(filepath.Join(dir, render.LlamaUnitName)) + " /etc/systemd/system/",
		"sudo install -m 0644 -o root -g root " + q(filepath.Join(dir, render.CaddyfileName)) + " /etc/caddy/Caddyfile",
		"sudo test -e " + q(envFile) + " || sudo install -D -m 0600 -o root -g root " + q(filepath.Join(dir, render.EnvExampleName)) + " " + q(envFile),
		"sudo systemctl daemon-reload",
		"sudo systemctl enable --now " + render.LlamaUnitName + " " + render.GatewayUnitName,
		"sudo systemctl reload caddy",
	}
}
