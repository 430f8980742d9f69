package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newRuntimePause is `sbx runtime pause [RUNTIME]`.
func newRuntimePause(g *globals, s *scope) *cobra.Command {
	return runtimeVerb(g, s, "pause", "Pause the runtime's sandbox", func(ctx context.Context, c *client.Client, ref runtimeRef) (*apiv1.Runtime, error) {
		return c.PauseRuntime(ctx, ref.org, ref.workspace, ref.id)
	})
}
