package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSecretRm is `sbx secret rm NAME|ID [--user]`.
func newSecretRm(g *globals, s *scope) *cobra.Command {
	var user bool
	cmd := &cobra.Command{
		Use:     "rm NAME|ID",
		Aliases: []string{"remove", "delete"},
		Short:   "Remove a secret, value and all: the org's (owners and admins) or, with --user, your own",
		Args:    args("NAME|ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			sec, err := c.DeleteSecret(ctx, org, args[0], secretScope(user))
			var apiErr *apiv1.Error
			if !user && errors.As(err, &apiErr) && apiErr.Code == http.StatusNotFound && strings.HasPrefix(apiErr.Detail, "secret ") {
				apiErr.Detail += " (your own secrets need --user)"
			}
			if err != nil {
				return err
			}
			return g.show(sec, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "removed %s\n", secretWhat(sec))
				return err
			})
		}),
	}
	cmd.Flags().BoolVar(&user, "user", false, "your own secret, not the org's (needs a member's key)")
	return cmd
}
