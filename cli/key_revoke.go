package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newKeyRevoke is `sbx key revoke ID`.
func newKeyRevoke(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke an API key at once; it stays listed",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			k, err := c.RevokeKey(ctx, org, args[0])
			if err != nil {
				return err
			}
			return g.show(k, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "revoked key %s (%s, %s…) at %s\n", k.ID, k.Name, k.Prefix, stampPtr(k.RevokedAt))
				return err
			})
		}),
	}
}
