package authz

import (
	"context"

	"github.com/sbxdev/sbx"
)

// SSH keys. An SSH key acts as an API key of its member or its project
// would (sbx.SSHKey.Acts): the SSH gateway lets it into what that key
// reaches, with that key's role. So registering or removing one is making
// or revoking that API key (ManageKey), with one more grant: a key may
// register and remove SSH keys that act exactly as it does itself — a
// member's key its own member's, a project's key its own project's — since
// those reach nothing it does not.

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

// ActsAs reports whether SSH key k acts exactly as c's own API key does:
// both a member's keys of one user, or both a project's keys of one
// project, in one org.
func ActsAs(c sbx.Caller, k sbx.SSHKey) bool {
	if k.OrgID != c.Org.ID {
		return false
	}
	switch c.Key.Scope() {
	case "member":
		return k.UserID == c.Key.UserID && k.ProjectID == ""
	case "project":
		return k.ProjectID == c.Key.ProjectID && k.UserID == ""
	}
	return false
}
