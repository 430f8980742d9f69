package httpapi

import (
	"context"
	"net/http"

	"github.com/sbxdev/sbx"
)

// Authorization. A key acts with a role in its org (sbx.Caller.Role):
// org-wide keys as owners, project keys as members, a member's key with its
// user's highest role in the org's workspaces. Owners and admins manage
// workspaces, projects, members and keys; members use sandboxes and read.
// Within a workspace, a member's key acts with its user's role there (an
// owner of the org is one everywhere). The operator's routes need the
// operator's key.

// operator answers a 403 unless the caller's key is the operator's.
func (s *Server) operator(w http.ResponseWriter, r *http.Request) bool {
	if caller(r).Key.Operator {
		return true
	}
	s.error(w, r, sbx.Errorf(sbx.EForbidden, "%s %s is the operator's: it needs the operator's key (the admin key `sbx serve` made at first start)", r.Method, r.URL.Path))
	return false
}

// need refuses what needs at least role min in the org.
func need(c sbx.Caller, min sbx.Role, what string) error {
	if c.Role.AtLeast(min) {
		return nil
	}
	return sbx.Errorf(sbx.EForbidden, "%s needs the %s role; this key acts as %s", what, roleNames(min), c.Role)
}

// needIn refuses what needs at least role min in a workspace, where the
// caller acts with role.
func needIn(role, min sbx.Role, what, workspace string) error {
	if role.AtLeast(min) {
		return nil
	}
	acts := "acts as " + string(role) + " there"
	if role == "" {
		acts = "acts for a user who is not a member of it"
	}
	return sbx.Errorf(sbx.EForbidden, "%s needs the %s role in workspace %s; this key %s", what, roleNames(min), workspace, acts)
}

// notAbove refuses to grant, or act on someone with, a role above the caller's.
func notAbove(role, target sbx.Role, what string) error {
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

// workspaceRole is the role the caller acts with in a workspace.
func (s *Server) workspaceRole(ctx context.Context, c sbx.Caller, workspaceID string) (sbx.Role, error) {
	if !c.MemberScoped() {
		return c.Role, nil
	}
	return s.store.MemberRole(ctx, workspaceID, c.User.ID)
}
