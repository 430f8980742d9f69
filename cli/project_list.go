package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newProjectList is `sbx project list`.
func newProjectList(g *globals, s *scope) *cobra.Command {
	var p pageFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's projects with their runtimes, oldest first",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, ws, err := s.resolve(ctx, c)
			if err != nil {
				return err
			}
			return list(g, p, func(pg client.Page) ([]apiv1.Project, string, error) {
				l, err := c.Projects(ctx, org, ws, pg)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			}, []string{"ID", "NAME", "RUNTIME", "CREATED"}, func(p apiv1.Project) []string {
				return []string{p.ID, p.Name, orDash(p.RuntimeID), stamp(p.CreatedAt)}
			})
		}),
	}
	p.add(cmd, "projects")
	return cmd
}
