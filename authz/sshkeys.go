package authz

import (
	"context"

	"github.com/sbxdev/sbx"
)

// SSH keys. An SSH key acts as an API key of its member or its project
// would (sbx.SSHKey.Acts): the SSH gateway lets it into what that key
// reaches, with that key's role. So registering or removing one is making
// or revoking that API key (ManageKey), with one more grant: a member's
// key may register and remove its own member's SSH keys, which reach
// nothing it does not, and end with the membership. A project's key may
// not register its project's: an SSH key outlives the API key that made
// it, so a project key (which makes no API keys) could otherwise turn a
// leak of itself into access its revocation does not end.

// ManageSSHKey refuses c making or removing (verb: "registering",
// "removing") SSH key k of c's org unless k acts as c itself does, or c may
// make or revoke the API key k acts as.
func (p Policy) ManageSSHKey(ctx context.Context, c sbx.Caller, k sbx.SSHKey, verb string) error {
	if k.OrgID != c.Org.ID {
		return sbx.Errorf(sbx.ENotFound, "SSH key %s not found", k.ID)
	}
	if ActsAs(c, k) {
		return nil
	}
	return p.ManageKey(ctx, c, k.Acts(), verb+" an SSH key that acts as")
}

// ActsAs reports whether SSH key k acts exactly as c's own member's key
// does: both keys of one user, in one org.
func ActsAs(c sbx.Caller, k sbx.SSHKey) bool {
	return k.OrgID == c.Org.ID && c.Key.Scope() == "member" && k.UserID == c.Key.UserID && k.ProjectID == ""
}
