package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newVolumeInfo is `sbx volume info VOLUME`.
func newVolumeInfo(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "info VOLUME",
		Short: "Show a volume",
		Args:  args("VOLUME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showVolume(c.GetVolume(ctx, args[0]))
		}),
	}
}
