package authz

import (
	"context"

	"github.com/sbxdev/sbx"
)

// Projects. A key acts in its own project unless a request names another:
// an org's key may name any project of its org; a member's key one of a
// workspace its user is a member of; a project's key only its own. Any
// other project is not found, as one that does not exist, so that a key
// learns nothing of the projects beyond its reach.

// InProject answers c acting in project id of its org, with that project
// and its workspace in place of the key's own.
func (p Policy) InProject(ctx context.Context, c sbx.Caller, id string) (sbx.Caller, error) {
	if id == c.Project.ID {
		return c, nil
	}
	notFound := sbx.Errorf(sbx.ENotFound, "project %s not found", id) // as the ledger's own
	if !c.OrgWide() && id != c.Key.ProjectID {
		return c, notFound
	}
	proj, err := p.Store.GetProject(ctx, c.Org.ID, id)
	if err != nil {
		return c, err
	}
	role, err := p.WorkspaceRole(ctx, c, proj.WorkspaceID)
	if err != nil {
		return c, err
	}
	if role == "" {
		return c, notFound
	}
	ws, err := p.Store.GetWorkspace(ctx, c.Org.ID, proj.WorkspaceID)
	if err != nil {
		return c, err
	}
	c.Workspace, c.Project = ws, proj
	return c, nil
}
