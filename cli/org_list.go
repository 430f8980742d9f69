package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newOrgList is `sbx org list`.
func newOrgList(g *globals) *cobra.Command {
	var p pageFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every org with its verification and plan, oldest first",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			return list(g, p, func(pg client.Page) ([]apiv1.Org, string, error) {
				l, err := c.Orgs(ctx, pg)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			}, []string{"ID", "NAME", "VERIFICATION", "PLAN", "CREATED"}, func(o apiv1.Org) []string {
				return []string{o.ID, o.Name, o.KYCStatus, planText(o.Plan), stamp(o.CreatedAt)}
			})
		}),
	}
	p.add(cmd, "orgs")
	return cmd
}
