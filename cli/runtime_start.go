package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newRuntimeStart is `sbx runtime start [RUNTIME]`.
func newRuntimeStart(g *globals, s *scope) *cobra.Command {
	var limit int64
	cmd := runtimeVerb(g, s, "start", "Provision a sandbox for an idle runtime and wait until it is ready",
		func(ctx context.Context, c *client.Client, ref runtimeRef) (*apiv1.Runtime, error) {
			var req apiv1.StartRuntimeRequest
			if limit != 0 {
				req.RequestedRuntimeLimitSeconds = &limit
			}
			return c.StartRuntime(ctx, ref.org, ref.workspace, ref.id, req)
		})
	cmd.Flags().Int64Var(&limit, "limit", 0, "the sandbox's timeout in seconds for this start (default: the runtime's)")
	return cmd
}
