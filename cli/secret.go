package cli

import (
	"github.com/sbxdev/sbx/apiv1"
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
