package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSSHKeyList is `sbx ssh-key list`.
func newSSHKeyList(g *globals, s *scope) *cobra.Command {
	var p pageFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the org's SSH keys",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			return list(g, p, func(pg client.Page) ([]apiv1.SSHKey, string, error) {
				l, err := c.SSHKeys(ctx, org, pg)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			}, []string{"ID", "NAME", "FINGERPRINT", "SCOPE", "FOR", "CREATED"}, func(k apiv1.SSHKey) []string {
				return []string{k.ID, k.Name, k.Fingerprint, k.Scope, orDash(k.ProjectID + k.UserID), stamp(k.CreatedAt)}
			})
		}),
	}
	p.add(cmd, "SSH keys")
	return cmd
}
