package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newRuntimeReset is `sbx runtime reset [RUNTIME]`.
func newRuntimeReset(g *globals, s *scope) *cobra.Command {
	return runtimeVerb(g, s, "reset", "Kill the runtime's sandbox (its ledger row stays) and leave the runtime idle", func(ctx context.Context, c *client.Client, ref runtimeRef) (*apiv1.Runtime, error) {
		return c.ResetRuntime(ctx, ref.org, ref.workspace, ref.id)
	})
}
