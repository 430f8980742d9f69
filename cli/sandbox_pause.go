package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxPause is `sbx sandbox pause ID`.
func newSandboxPause(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "pause ID",
		Short: "Pause a running sandbox; credits stop accruing for its compute",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showSandbox(c.Pause(ctx, args[0]))
		}),
	}
}
