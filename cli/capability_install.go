package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilityInstall is `sbx capability install NAME`.
func newCapabilityInstall(g *globals, s *capabilityScope) *cobra.Command {
	var req apiv1.InstallCapabilityRequest
	var disabled bool
	flags := flagValues{}
	cmd := &cobra.Command{
		Use:   "install NAME",
		Short: "Install a capability of the org's inventory or the catalog on the runtime; its next start materializes it",
		Example: "  sbx capability install git-toolkit --flag identity\n" +
			"  sbx capability install python-data --version 1.0.0 --source catalog --flag plotting=true",
		Args: args("NAME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, a []string) error {
			org, ws, rt, err := s.target(ctx, c)
			if err != nil {
				return err
			}
			req.Name = a[0]
			if len(flags) > 0 {
				req.Flags = flags
			}
			if disabled {
				off := false
				req.Enabled = &off
			}
			b, err := c.InstallCapability(ctx, org, ws, rt, req)
			if err != nil {
				return err
			}
			return g.showBinding(b, "installed")
		}),
	}
	f := cmd.Flags()
	f.StringVar(&req.Version, "version", "", "the version (default: the newest)")
	f.StringVar(&req.Source, "source", "", "inventory or catalog (default: the inventory when it has NAME, else the catalog)")
	f.BoolVar(&disabled, "disabled", false, "install it disabled")
	flags.add(cmd, "a flag to set")
	return cmd
}
