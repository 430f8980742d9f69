package tenancy

import (
	"context"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/lifecycle"
)

// A workspace's members. Everyone the workspace reaches reads them; its
// owners and admins add and remove them, never with or of a role above
// their own. A member beyond the plan's limit pauses the workspace's
// compute (Compute).

// MemberSpec is a member to add.
type MemberSpec struct {
	Email string
	Name  string   // for a user new to sbx; an existing user keeps theirs
	Role  sbx.Role // default member
}

// Members lists ws's members.
func (s *Service) Members(ctx context.Context, c sbx.Caller, ws sbx.Workspace, p sbx.Page) ([]sbx.Member, string, error) {
	if _, err := s.RoleIn(ctx, c, ws, sbx.RoleMember, "listing members"); err != nil {
		return nil, "", err
	}
	return s.store.Members(ctx, ws.OrgID, ws.ID, p)
}

// AddMember makes the user with m's email (a new user if there is none) a
// member of ws; beyond the plan's member limit the workspace's compute
// pauses.
func (s *Service) AddMember(ctx context.Context, c sbx.Caller, ws sbx.Workspace, m MemberSpec) (lifecycle.MemberChange, error) {
	role := m.Role
	if role == "" {
		role = sbx.RoleMember
	}
	if !role.Valid() {
		return lifecycle.MemberChange{}, sbx.Invalid("role", "role %q must be owner, admin or member", m.Role)
	}
	mine, err := s.RoleIn(ctx, c, ws, sbx.RoleAdmin, "adding a member")
	if err == nil {
		err = authz.NotAbove(mine, role, "adding a member as "+string(role))
	}
	if err != nil {
		return lifecycle.MemberChange{}, err
	}
	return s.compute.AddMember(ctx, ws.OrgID, ws.ID, m.Email, m.Name, role)
}

// RemoveMember ends the membership of ws of member (the user's ID or
// email); back within the member limit, the compute it paused resumes.
func (s *Service) RemoveMember(ctx context.Context, c sbx.Caller, ws sbx.Workspace, member string) (lifecycle.MemberChange, error) {
	mine, err := s.RoleIn(ctx, c, ws, sbx.RoleAdmin, "removing a member")
	if err != nil {
		return lifecycle.MemberChange{}, err
	}
	m, err := s.store.GetMember(ctx, ws.OrgID, ws.ID, member)
	if err == nil {
		err = authz.NotAbove(mine, m.Role, "removing a member who is "+string(m.Role))
	}
	if err != nil {
		return lifecycle.MemberChange{}, err
	}
	return s.compute.RemoveMember(ctx, ws.OrgID, ws.ID, m.User.ID)
}
