package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newOrgVerify is `sbx org verify ORG` and `sbx org verify --user USER`.
func newOrgVerify(g *globals) *cobra.Command {
	var status, user string
	cmd := &cobra.Command{
		Use:   "verify {ORG | --user USER}",
		Short: "Set the verification (KYC) state of an org or of a user; a verified org or user may create sandboxes",
		Example: "  sbx org verify acme\n  sbx org verify acme --status pending\n" +
			"  sbx org verify --user ada@example.com",
		Args: func(cmd *cobra.Command, got []string) error {
			if (len(got) == 1) == (user != "") {
				return usagef("%s takes an ORG or --user USER, one of the two\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			return nil
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			if user != "" {
				u, err := c.SetUserVerification(ctx, user, status)
				if err != nil {
					return err
				}
				return g.show(u, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "user %s (%s) is %s\n", u.Email, u.ID, u.KYCStatus)
					return err
				})
			}
			o, err := c.SetOrgVerification(ctx, args[0], status)
			if err != nil {
				return err
			}
			return g.show(o, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "org %s (%s) is %s\n", o.Name, o.ID, o.KYCStatus)
				return err
			})
		}),
	}
	cmd.Flags().StringVar(&status, "status", "verified", "verified, pending or unverified")
	cmd.Flags().StringVar(&user, "user", "", "a user's ID or email, instead of an org")
	return cmd
}
