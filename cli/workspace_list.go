package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newWorkspaceList is `sbx workspace list`.
func newWorkspaceList(g *globals, s *scope) *cobra.Command {
	var p pageFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the org's workspaces, oldest first",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			return list(g, p, func(pg client.Page) ([]apiv1.Workspace, string, error) {
				l, err := c.Workspaces(ctx, org, pg)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			}, []string{"ID", "NAME", "CREATED"}, func(ws apiv1.Workspace) []string {
				return []string{ws.ID, ws.Name, stamp(ws.CreatedAt)}
			})
		}),
	}
	p.add(cmd, "workspaces")
	return cmd
}
