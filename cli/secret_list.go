package cli

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSecretList is `sbx secret list`.
func newSecretList(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the org's secrets and, with a member's key, your own (never their values)",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			l, err := c.Secrets(ctx, org)
			if err != nil {
				return err
			}
			return g.show(l, func(w io.Writer) error {
				rows := make([][]string, 0, len(l.Items))
				for _, sec := range l.Items {
					rows = append(rows, []string{sec.ID, sec.Name, sec.Scope, stamp(sec.CreatedAt), stamp(sec.UpdatedAt)})
				}
				return table(w, []string{"ID", "NAME", "SCOPE", "CREATED", "UPDATED"}, rows)
			})
		}),
	}
}
