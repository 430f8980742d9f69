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
	var secrets []string
	cmd := runtimeVerb(g, s, "start", "Provision a sandbox for an idle runtime, materialize its capabilities and wait until it is ready",
		func(ctx context.Context, c *client.Client, ref runtimeRef) (*apiv1.Runtime, error) {
			var req apiv1.StartRuntimeRequest
			if limit != 0 {
				req.RequestedRuntimeLimitSeconds = &limit
			}
			ids, err := secretIDs(ctx, c, ref.org, secrets)
			if err != nil {
				return nil, err
			}
			req.SecretIDs = ids
			return c.StartRuntime(ctx, ref.org, ref.workspace, ref.id, req)
		})
	cmd.Flags().Int64Var(&limit, "limit", 0, "the sandbox's timeout in seconds for this start (default: the runtime's)")
	cmd.Flags().StringArrayVar(&secrets, "secret", nil, "a secret, by name or ID, to put in the sandbox's env for this start (repeat)")
	return cmd
}
