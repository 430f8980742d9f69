package cli

import (
	"context"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxRefresh is `sbx sandbox refresh ID`.
func newSandboxRefresh(g *globals) *cobra.Command {
	var d time.Duration
	cmd := &cobra.Command{
		Use:   "refresh ID",
		Short: "Keep a running sandbox alive longer; never shortens its life",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showSandbox(c.Refresh(ctx, args[0], d))
		}),
	}
	cmd.Flags().Var(durationValue{&d}, "duration", "how long from now, in seconds or as 10m, at most 1h (default: the server's)")
	return cmd
}
