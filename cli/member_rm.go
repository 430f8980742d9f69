package cli

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newMemberRm is `sbx member rm USER`.
func newMemberRm(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:   "rm USER",
		Short: "Remove a member (user ID or email) from the workspace; back within the plan's limit, its sandboxes resume",
		Args:  args("USER"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, ws, err := s.resolve(ctx, c)
			if err != nil {
				return err
			}
			ch, err := c.RemoveMember(ctx, org, ws, args[0])
			if err != nil {
				return err
			}
			return g.show(ch, func(w io.Writer) error { return memberChangeText(w, "removed", ch) })
		}),
	}
}
