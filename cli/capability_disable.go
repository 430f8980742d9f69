package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilityDisable is `sbx capability disable NAME|BINDING`.
func newCapabilityDisable(g *globals, s *capabilityScope) *cobra.Command {
	return &cobra.Command{
		Use:   "disable NAME|BINDING",
		Short: "Disable a capability installed on the runtime: it stays installed, and leaves the resolved set",
		Args:  args("NAME|BINDING"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, a []string) error {
			off := false
			return g.updateCapability(ctx, c, s, a[0], func(apiv1.CapabilityBinding) apiv1.UpdateCapabilityRequest {
				return apiv1.UpdateCapabilityRequest{Enabled: &off}
			})
		}),
	}
}
