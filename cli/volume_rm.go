package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newVolumeRm is `sbx volume rm VOLUME`.
func newVolumeRm(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm VOLUME",
		Short: "Delete a volume and its data (no sandbox may mount it)",
		Args:  args("VOLUME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showVolume(c.DeleteVolume(ctx, args[0]))
		}),
	}
}
