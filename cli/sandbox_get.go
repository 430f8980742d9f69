package cli

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxGet is `sbx sandbox get ID`.
func newSandboxGet(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a sandbox: state, times, resources, credits, diagnostic and timeline",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			sb, err := c.Get(ctx, args[0])
			if err != nil {
				return err
			}
			return g.show(sb, func(w io.Writer) error { return sandboxDetail(w, sb) })
		}),
	}
}
