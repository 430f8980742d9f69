package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newVolumeResize is `sbx volume resize VOLUME --size-mb N`.
func newVolumeResize(g *globals) *cobra.Command {
	var size int64
	cmd := &cobra.Command{
		Use:   "resize VOLUME",
		Short: "Grow a volume's cap (no sandbox may mount it meanwhile)",
		Args:  args("VOLUME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showVolume(c.ResizeVolume(ctx, args[0], size))
		}),
	}
	cmd.Flags().Int64Var(&size, "size-mb", 0, "the new cap in MiB, more than the current one")
	return cmd
}
