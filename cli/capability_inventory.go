package cli

import (
	"context"
	"strconv"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilityInventory is `sbx capability inventory`: the org's uploads.
func newCapabilityInventory(g *globals, s *capabilityScope) *cobra.Command {
	var p pageFlags
	cmd := &cobra.Command{
		Use:   "inventory",
		Short: "List the capability versions uploaded to the org, oldest first",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			return list(g, p, func(pg client.Page) ([]apiv1.Capability, string, error) {
				l, err := c.CapabilityInventory(ctx, org, pg)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			}, []string{"NAME", "VERSION", "SIZE", "SHA256", "UPLOADED", "DESCRIPTION"}, func(b apiv1.Capability) []string {
				return []string{b.Name, b.Version, strconv.FormatInt(b.Size, 10), short(b.SHA256), stampPtr(b.CreatedAt), b.Description}
			})
		}),
	}
	p.add(cmd, "versions")
	return cmd
}

// short is the first 12 characters of a digest.
func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
