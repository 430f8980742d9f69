package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newRuntimeResume is `sbx runtime resume [RUNTIME]`.
func newRuntimeResume(g *globals, s *scope) *cobra.Command {
	return runtimeVerb(g, s, "resume", "Resume the runtime's paused sandbox", func(ctx context.Context, c *client.Client, ref runtimeRef) (*apiv1.Runtime, error) {
		return c.ResumeRuntime(ctx, ref.org, ref.workspace, ref.id)
	})
}
