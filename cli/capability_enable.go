package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilityEnable is `sbx capability enable NAME|BINDING`.
func newCapabilityEnable(g *globals, s *capabilityScope) *cobra.Command {
	return &cobra.Command{
		Use:   "enable NAME|BINDING",
		Short: "Enable a capability installed on the runtime",
		Args:  args("NAME|BINDING"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, a []string) error {
			on := true
			return g.updateCapability(ctx, c, s, a[0], func(apiv1.CapabilityBinding) apiv1.UpdateCapabilityRequest {
				return apiv1.UpdateCapabilityRequest{Enabled: &on}
			})
		}),
	}
}
