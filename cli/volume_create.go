package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newVolumeCreate is `sbx volume create NAME --size-mb N`.
func newVolumeCreate(g *globals) *cobra.Command {
	var size int64
	var project string
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Make a volume with a size cap in a project",
		Example: "  sbx volume create data --size-mb 1024\n  sbx sandbox create base --volume data:/mnt",
		Args:    args("NAME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showVolume(c.CreateVolume(ctx, args[0], size, project))
		}),
	}
	cmd.Flags().Int64Var(&size, "size-mb", 1024, "its cap in MiB: writes past it fail with ENOSPC")
	cmd.Flags().StringVar(&project, "project", "", "the ID of the project it belongs to, one the key reaches (default: the key's)")
	return cmd
}
