package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilityList is `sbx capability list`: the runtime's bindings.
func newCapabilityList(g *globals, s *capabilityScope) *cobra.Command {
	var p pageFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the capabilities installed on the runtime, enabled or not, oldest first",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, ws, rt, err := s.target(ctx, c)
			if err != nil {
				return err
			}
			return list(g, p, func(pg client.Page) ([]apiv1.CapabilityBinding, string, error) {
				l, err := c.RuntimeCapabilities(ctx, org, ws, rt, pg)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			}, []string{"NAME", "VERSION", "SOURCE", "STATE", "FLAGS SET", "BINDING"}, func(b apiv1.CapabilityBinding) []string {
				return []string{b.Name, b.Version, b.Source, enabledText(b.Enabled), flagsText(b.Flags), b.ID}
			})
		}),
	}
	p.add(cmd, "bindings")
	return cmd
}
