package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newKeyList is `sbx key list`.
func newKeyList(g *globals, s *scope) *cobra.Command {
	var p pageFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the org's API keys, revoked ones included (never their secrets)",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			return list(g, p, func(pg client.Page) ([]apiv1.APIKey, string, error) {
				l, err := c.Keys(ctx, org, pg)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			}, []string{"ID", "NAME", "PREFIX", "SCOPE", "FOR", "CREATED", "REVOKED"}, func(k apiv1.APIKey) []string {
				scope := k.Scope
				if k.Operator {
					scope += ", operator"
				}
				return []string{k.ID, k.Name, k.Prefix, scope, orDash(k.ProjectID + k.UserID), stamp(k.CreatedAt), orDash(stampPtr(k.RevokedAt))}
			})
		}),
	}
	p.add(cmd, "keys")
	return cmd
}
