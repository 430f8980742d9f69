package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newMemberList is `sbx member list`.
func newMemberList(g *globals, s *scope) *cobra.Command {
	var p pageFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the workspace's members, by when they joined",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, ws, err := s.resolve(ctx, c)
			if err != nil {
				return err
			}
			return list(g, p, func(pg client.Page) ([]apiv1.Member, string, error) {
				l, err := c.Members(ctx, org, ws, pg)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			}, []string{"USER ID", "EMAIL", "NAME", "ROLE", "KYC", "JOINED"}, func(m apiv1.Member) []string {
				return []string{m.User.ID, m.User.Email, orDash(m.User.Name), m.Role, m.User.KYCStatus, stamp(m.CreatedAt)}
			})
		}),
	}
	p.add(cmd, "members")
	return cmd
}
