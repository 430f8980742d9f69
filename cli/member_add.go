package cli

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newMemberAdd is `sbx member add EMAIL`.
func newMemberAdd(g *globals, s *scope) *cobra.Command {
	var req apiv1.AddMemberRequest
	cmd := &cobra.Command{
		Use:   "add EMAIL",
		Short: "Add a member to the workspace; beyond the plan's limit, the workspace's sandboxes pause",
		Args:  args("EMAIL"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, ws, err := s.resolve(ctx, c)
			if err != nil {
				return err
			}
			req.Email = args[0]
			ch, err := c.AddMember(ctx, org, ws, req)
			if err != nil {
				return err
			}
			return g.show(ch, func(w io.Writer) error { return memberChangeText(w, "added", ch) })
		}),
	}
	f := cmd.Flags()
	f.StringVar(&req.Name, "name", "", "the member's name, for a user new to sbx")
	f.StringVar(&req.Role, "role", "member", "owner, admin or member")
	return cmd
}
