package cli

import (
	"context"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newRuntimeKeepalive is `sbx runtime keepalive [RUNTIME]`.
func newRuntimeKeepalive(g *globals, s *scope) *cobra.Command {
	var extend time.Duration
	cmd := runtimeVerb(g, s, "keepalive", "Keep the runtime's running sandbox alive longer (never shortens)",
		func(ctx context.Context, c *client.Client, ref runtimeRef) (*apiv1.Runtime, error) {
			return c.KeepaliveRuntime(ctx, ref.org, ref.workspace, ref.id, extend)
		})
	cmd.Flags().Var(durationValue{&extend}, "extend", "keep it alive at least this long from now: seconds (300) or a duration (30m) (default: the runtime's timeout)")
	return cmd
}
