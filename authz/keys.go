package authz

import (
	"context"

	"github.com/sbxdev/sbx"
)

// Keys. A key reaches workspaces with a role in each: an org-wide key (and
// the key of a user who is an owner anywhere in the org) all of them as an
// owner; a project's key its project's workspace as a member; a member's
// key each workspace its user belongs to, with the user's role there.
//
// The rule: making or revoking a key needs, in every workspace the key
// reaches, the admin role and at least the role the key acts with there. So
// an owner of the org may make any key, and an admin only keys that reach
// nothing beyond the workspaces it administers, with no role above its own.

// grant is one workspace a key reaches and the role it acts with there.
type grant struct {
	workspace sbx.Workspace
	role      sbx.Role
}

// reach is what k reaches: every workspace as an owner (all), or grants.
func (p Policy) reach(ctx context.Context, k sbx.APIKey) (grants []grant, all bool, err error) {
	switch k.Scope() {
	case "org":
		return nil, true, nil
	case "project":
		pr, err := p.Store.GetProject(ctx, k.OrgID, k.ProjectID)
		if err != nil {
			return nil, false, err
		}
		ws, err := p.Store.GetWorkspace(ctx, k.OrgID, pr.WorkspaceID)
		return []grant{{ws, sbx.RoleMember}}, false, err
	}
	ms, err := p.Store.Memberships(ctx, k.OrgID, k.UserID)
	if err != nil {
		return nil, false, err
	}
	for _, m := range ms {
		if m.Role == sbx.RoleOwner {
			return nil, true, nil
		}
		grants = append(grants, grant{sbx.Workspace{ID: m.WorkspaceID, OrgID: m.OrgID, Name: m.WorkspaceName}, m.Role})
	}
	return grants, false, nil
}

// ManageKey refuses c making or revoking (verb: "making", "revoking") key k
// unless c holds, in every workspace k reaches, the admin role and at least
// k's role there.
func (p Policy) ManageKey(ctx context.Context, c sbx.Caller, k sbx.APIKey, verb string) error {
	what := verb + " " + describe(k)
	c, err := p.current(ctx, c)
	if err != nil {
		return err
	}
	if err := Need(c, sbx.RoleAdmin, what); err != nil {
		return err
	}
	grants, all, err := p.reach(ctx, k)
	if err != nil {
		return err
	}
	if all {
		return Need(c, sbx.RoleOwner, what+" (it acts as an owner of the whole org)")
	}
	for _, g := range grants {
		min := sbx.RoleAdmin
		if g.role.AtLeast(min) {
			min = g.role
		}
		role, err := p.WorkspaceRole(ctx, c, g.workspace.ID)
		if err != nil {
			return err
		}
		if err := NeedIn(role, min, what+" (it acts as "+string(g.role)+" there)", g.workspace.Name); err != nil {
			return err
		}
	}
	return nil
}

// current is c, a member's key, with the org role its member holds now
// (the highest of their memberships, read as the policy's other reads
// are: within Atomically, held until the write commits), not as
// authentication found it; other keys' roles are their kind's.
func (p Policy) current(ctx context.Context, c sbx.Caller) (sbx.Caller, error) {
	if c.User.ID == "" { // an org-wide or a project's key: no member to ask about
		return c, nil
	}
	ms, err := p.Store.Memberships(ctx, c.Org.ID, c.User.ID)
	if err != nil {
		return c, err
	}
	c.Role = ""
	for _, m := range ms {
		if !c.Role.AtLeast(m.Role) {
			c.Role = m.Role
		}
	}
	return c, nil
}

func describe(k sbx.APIKey) string {
	switch k.Scope() {
	case "project":
		return "a key of project " + k.ProjectID
	case "member":
		return "a member's key"
	}
	return "an org-wide key"
}
