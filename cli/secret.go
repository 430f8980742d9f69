package cli

import (
	"context"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSecret is the `sbx secret` command group: the secrets of the API key's
// org (or --org's), one file per verb. A value goes in and never comes out:
// no command prints one.
func newSecret(g *globals) *cobra.Command {
	var s scope
	cmd := group(&cobra.Command{Use: "secret", Aliases: []string{"secrets"},
		Short: "Set, list and remove the secrets a runtime's start can put in its sandbox's environment"},
		newSecretSet(g, &s), newSecretList(g, &s), newSecretRm(g, &s))
	s.orgFlag(cmd)
	return cmd
}

// secretScope is the scope --user picks: the member's own, or the org's.
func secretScope(user bool) string {
	if user {
		return "user"
	}
	return "org"
}

// secretWhat names a secret in a status line: "org secret TOKEN (ID)".
func secretWhat(sec *apiv1.Secret) string {
	return sec.Scope + " secret " + sec.Name + " (" + sec.ID + ")"
}

// secretIDs turns secrets named by name or ID into IDs: a name is the
// member's own secret before the org's of that name, as the server reads it.
func secretIDs(ctx context.Context, c *client.Client, org string, refs []string) ([]string, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	list, err := c.Secrets(ctx, org)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(refs))
	for _, ref := range refs {
		id := ref // an ID, or a name the server will say it does not know
		for _, sec := range list.Items {
			if sec.ID == ref || (sec.Name == ref && (id == ref || sec.Scope == "user")) {
				id = sec.ID
			}
		}
		ids = append(ids, id)
	}
	return ids, nil
}
