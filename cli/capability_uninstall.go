package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilityUninstall is `sbx capability uninstall NAME|BINDING`.
func newCapabilityUninstall(g *globals, s *capabilityScope) *cobra.Command {
	return &cobra.Command{
		Use:   "uninstall NAME|BINDING",
		Short: "Uninstall a capability from the runtime",
		Args:  args("NAME|BINDING"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, a []string) error {
			org, ws, rt, b, err := s.binding(ctx, c, a[0])
			if err != nil {
				return err
			}
			got, err := c.UninstallCapability(ctx, org, ws, rt, b.ID)
			if err != nil {
				return err
			}
			return g.showBinding(got, "uninstalled")
		}),
	}
}
