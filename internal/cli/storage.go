package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/raygw/raygw/internal/ops/hostfs"
	"github.com/raygw/raygw/internal/ops/storage"
)

func init() { register(newStorageCmd) }

func newStorageCmd(g *Globals) *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Check free space and inodes on every volume raygw needs",
		Long: `Storage measures /, the APT cache and state, the raygw install directory,
Ray state, /var/log, /tmp, /var/tmp and the volumes of the model, engine,
async-queue and staging source paths against RAY_DEPLOY_MIN_FREE_STORAGE_MIB.
Missing paths are measured at their nearest existing ancestor; relative source
paths resolve from the working directory. It exits 1 on any shortfall.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := g.Load(nil)
			if err != nil {
				return err
			}
			wd, err := os.Getwd()
			if err != nil {
				return err
			}
			h := hostfs.New(root)
			r, err := storage.Check(h, storage.Targets(l.Config, wd), l.Deploy.MinFreeStorageMiB)
			r.Write(cmd.OutOrStdout())
			if err != nil {
				return &ExitError{Code: 1, Err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "/", "read the host from this directory tree")
	return cmd
}
