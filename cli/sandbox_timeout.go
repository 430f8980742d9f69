package cli

import (
	"context"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxTimeout is `sbx sandbox timeout ID SECONDS|DURATION`.
func newSandboxTimeout(g *globals) *cobra.Command {
	var d time.Duration
	return &cobra.Command{
		Use:     "timeout ID SECONDS|DURATION",
		Short:   "Set when a sandbox times out, counted from now",
		Example: "  sbx sandbox timeout sbx-abc 300\n  sbx sandbox timeout sbx-abc 2h",
		Args:    args("ID", "SECONDS|DURATION"),
		PreRunE: func(_ *cobra.Command, args []string) (err error) {
			if d, err = parseDuration(args[1]); err != nil {
				return usagef("%v", err)
			}
			return nil
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showSandbox(c.SetTimeout(ctx, args[0], d))
		}),
	}
}
