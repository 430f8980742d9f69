package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilitySet is `sbx capability set NAME|BINDING`: flags, added to
// those set on the binding, and version.
func newCapabilitySet(g *globals, s *capabilityScope) *cobra.Command {
	var version string
	flags := flagValues{}
	cmd := &cobra.Command{
		Use:     "set NAME|BINDING",
		Short:   "Set flags of a capability installed on the runtime, or change its version",
		Example: "  sbx capability set python-data --flag plotting=true --flag ml=false\n  sbx capability set team-tools --version 1.1.0",
		Args:    args("NAME|BINDING"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, a []string) error {
			if len(flags) == 0 && version == "" {
				return usagef("sbx capability set needs --flag or --version")
			}
			return g.updateCapability(ctx, c, s, a[0], func(b apiv1.CapabilityBinding) apiv1.UpdateCapabilityRequest {
				var req apiv1.UpdateCapabilityRequest
				if len(flags) > 0 {
					set := map[string]bool{}
					for k, v := range b.Flags {
						set[k] = v
					}
					for k, v := range flags {
						set[k] = v
					}
					req.Flags = &set
				}
				if version != "" {
					req.Version = &version
				}
				return req
			})
		}),
	}
	cmd.Flags().StringVar(&version, "version", "", "the version to change to, from the binding's source")
	flags.add(cmd, "a flag to set (the others keep their values)")
	return cmd
}
