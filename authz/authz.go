// Package authz is sbx's authorization policy: who may do what to which
// part of an org. Every surface asks it (today the REST API; the console,
// SSH gateway and compatibility APIs after it), so none decides tenancy on
// its own.
//
// A key acts with a role in its org (sbx.Caller.Role): org-wide keys as
// owners, project keys as members of their project's workspace and nowhere
// else, a member's key with its user's role in each workspace the user
// belongs to (a user who is an owner anywhere is one everywhere). Owners and
// admins manage workspaces, projects, members and keys; members use
// sandboxes and read.
package authz

import (
	"context"

	"github.com/sbxdev/sbx"
)

// Store is what the policy reads of the ledger.
type Store interface {
	MemberRole(ctx context.Context, workspaceID, userID string) (sbx.Role, error)
	Memberships(ctx context.Context, orgID, userID string) ([]sbx.Member, error)
	GetProject(ctx context.Context, orgID, id string) (sbx.Project, error)
	GetWorkspace(ctx context.Context, orgID, ref string) (sbx.Workspace, error)
}

// Policy answers authorization questions over a Store.
type Policy struct{ Store Store }

// InOrg refuses an org reference (an ID or a name) that is not c's own:
// any other org is not found, whether it exists or not.
func InOrg(c sbx.Caller, ref string) error {
	if ref == c.Org.ID || ref == c.Org.Name {
		return nil
	}
	return sbx.Errorf(sbx.ENotFound, "org %s not found", ref)
}

// Operator refuses what (an action of the operator of this sbx) unless c's
// key is the operator's.
func Operator(c sbx.Caller, what string) error {
	if c.Key.Operator {
		return nil
	}
	return sbx.Errorf(sbx.EForbidden, "%s is the operator's: it needs the operator's key (the admin key `sbx serve` made at first start)", what)
}

// Need refuses what needs at least role min in the org (what names it).
func Need(c sbx.Caller, min sbx.Role, what string) error {
	switch {
	case c.Role.AtLeast(min):
		return nil
	case c.Role == "":
		return sbx.Errorf(sbx.EForbidden, "%s needs the %s role; this key's member is no longer in any workspace of the org", what, roleNames(min))
	}
	return sbx.Errorf(sbx.EForbidden, "%s needs the %s role; this key acts as %s", what, roleNames(min), c.Role)
}

// NeedIn refuses what needs at least role min in a workspace, where the
// caller acts with role ("": it reaches nothing there).
func NeedIn(role, min sbx.Role, what, workspace string) error {
	if role.AtLeast(min) {
		return nil
	}
	acts := "acts as " + string(role) + " there"
	if role == "" {
		acts = "does not reach it"
	}
	return sbx.Errorf(sbx.EForbidden, "%s needs the %s role in workspace %s; this key %s", what, roleNames(min), workspace, acts)
}

// NotAbove refuses to grant, or act on someone with, a role above the
// caller's.
func NotAbove(role, target sbx.Role, what string) error {
	if role.AtLeast(target) {
		return nil
	}
	return sbx.Errorf(sbx.EForbidden, "%s needs the %s role; this key acts as %s", what, roleNames(target), role)
}

func roleNames(min sbx.Role) string {
	switch min {
	case sbx.RoleOwner:
		return "owner"
	case sbx.RoleAdmin:
		return "admin or owner"
	}
	return "member, admin or owner"
}

// WorkspaceRole is the role c acts with in a workspace: "" where it reaches
// nothing (a member's key outside its user's workspaces, a project's key
// outside its project's).
func (p Policy) WorkspaceRole(ctx context.Context, c sbx.Caller, workspaceID string) (sbx.Role, error) {
	switch {
	case c.MemberScoped():
		return p.Store.MemberRole(ctx, workspaceID, c.User.ID)
	case !c.OrgWide() && c.Project.WorkspaceID != workspaceID:
		return "", nil
	}
	return c.Role, nil
}

// In checks that c acts with at least role min in workspace ws (what names
// the action) and answers the role it acts with there.
func (p Policy) In(ctx context.Context, c sbx.Caller, ws sbx.Workspace, min sbx.Role, what string) (sbx.Role, error) {
	role, err := p.WorkspaceRole(ctx, c, ws.ID)
	if err == nil {
		err = NeedIn(role, min, what, ws.Name)
	}
	return role, err
}
