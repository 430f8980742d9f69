package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSSHKeyRm is `sbx ssh-key rm ID|FINGERPRINT`.
func newSSHKeyRm(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID|FINGERPRINT",
		Aliases: []string{"remove"},
		Short:   "Remove an SSH key; connections it opened stay open",
		Args:    args("ID|FINGERPRINT"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			k, err := c.RemoveSSHKey(ctx, org, args[0])
			if err != nil {
				return err
			}
			return g.show(k, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "removed SSH key %s (%s, %s)\n", k.ID, k.Name, k.Fingerprint)
				return err
			})
		}),
	}
}
