package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSSHKey is the `sbx ssh-key` command group: the public keys the SSH
// gateway lets in, one file per verb. A key acts as an API key of its
// member or project would: it opens the sandboxes that key reaches.
func newSSHKey(g *globals) *cobra.Command {
	var s scope
	cmd := group(&cobra.Command{Use: "ssh-key", Aliases: []string{"ssh-keys"},
		Short: "Register, list and remove the public keys the SSH gateway lets into sandboxes"},
		newSSHKeyAdd(g, &s), newSSHKeyList(g, &s), newSSHKeyRm(g, &s))
	s.orgFlag(cmd)
	s.workspaceFlag(cmd)
	return cmd
}

// projectID is the ID of the project ref names (an ID, or a name in the
// workspace the scope names); a ref no project of that workspace has is
// passed on as it is, for the server to judge.
func (s *scope) projectID(ctx context.Context, c *client.Client, ref string) (string, error) {
	org, ws, err := s.resolve(ctx, c)
	if err != nil {
		return "", err
	}
	_, _, err = pages("", true, func(cursor string) ([]apiv1.Project, string, error) {
		l, err := c.Projects(ctx, org, ws, client.Page{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		for _, p := range l.Items {
			if p.ID == ref || p.Name == ref {
				ref = p.ID
				return nil, "", nil
			}
		}
		return nil, l.NextCursor, nil
	})
	return ref, err
}
