package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newKeyCreate is `sbx key create NAME`.
func newKeyCreate(g *globals, s *scope) *cobra.Command {
	var req apiv1.CreateKeyRequest
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Make an API key and print its secret, shown this once, first",
		Long: "Make an API key of the org: a member's (--user; it acts as that member, with their role), " +
			"a project's (--project-id; it acts in that project only, as a member), or, with neither, an org-wide key " +
			"that acts as an owner (owners only).",
		Example: "  sbx key create ada-laptop --user ada@example.com\n  sbx key create ci --project-id PROJECT_ID",
		Args:    args("NAME"),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if req.User != "" && req.ProjectID != "" {
				return usagef("a key is a member's (--user) or a project's (--project-id), not both")
			}
			return nil
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			req.Name = args[0]
			k, err := c.CreateKey(ctx, org, req)
			if err != nil {
				return err
			}
			return g.show(k, func(w io.Writer) error {
				fmt.Fprintln(w, k.Secret)
				return fields(w, []field{{"Key ID", k.Key.ID}, {"Scope", k.Key.Scope}, {"Project", k.Key.ProjectID}, {"User", k.Key.UserID},
					{"Note", "the secret above is shown this once; keep it"}})
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&req.User, "user", "", "a member's user ID or email: the key acts as that member")
	f.StringVar(&req.ProjectID, "project-id", "", "a project's ID: the key acts in that project only")
	return cmd
}
