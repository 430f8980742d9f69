package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newRuntimeList is `sbx runtime list`.
func newRuntimeList(g *globals, s *scope) *cobra.Command {
	var p pageFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's runtimes, one per project, oldest first",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, ws, err := s.resolve(ctx, c)
			if err != nil {
				return err
			}
			return list(g, p, func(pg client.Page) ([]apiv1.Runtime, string, error) {
				l, err := c.Runtimes(ctx, org, ws, pg)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			}, []string{"ID", "PROJECT", "STATUS", "SANDBOX", "TEMPLATE"}, func(rt apiv1.Runtime) []string {
				return []string{rt.ID, rt.ProjectID, rt.Status, orDash(rt.SandboxID), rt.Config.TemplateID}
			})
		}),
	}
	p.add(cmd, "runtimes")
	return cmd
}
