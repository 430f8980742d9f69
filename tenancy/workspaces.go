package tenancy

import (
	"context"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
)

// An org's workspaces and their projects. Each key lists the workspaces it
// reaches (a member's key its user's, a project's key its project's) and
// their projects (a project's key only its own); owners and admins make
// them.

// Workspaces lists the workspaces of c's org that c reaches.
func (s *Service) Workspaces(ctx context.Context, c sbx.Caller, p sbx.Page) ([]sbx.Workspace, string, error) {
	return s.store.Workspaces(ctx, c.Org.ID, c.Reach(), p)
}

// CreateWorkspace makes a workspace in c's org, with a default project; a
// member's key makes its user a member of it, with the user's role in the
// org.
func (s *Service) CreateWorkspace(ctx context.Context, c sbx.Caller, name string) (sbx.Workspace, error) {
	if err := authz.Need(c, sbx.RoleAdmin, "creating a workspace"); err != nil {
		return sbx.Workspace{}, err
	}
	ws, _, err := s.store.CreateWorkspace(ctx, c.Org.ID, name, c.User.ID, c.Role, s.clock.Now())
	return ws, err
}

// Workspace finds a workspace of c's org by ID or name, whether c reaches
// it or not (the methods that act in it check that); one of another org is
// not found.
func (s *Service) Workspace(ctx context.Context, c sbx.Caller, ref string) (sbx.Workspace, error) {
	return s.store.GetWorkspace(ctx, c.Org.ID, ref)
}

// RoleIn checks that c acts with at least role min in ws (what names the
// action) and answers the role it acts with there.
func (s *Service) RoleIn(ctx context.Context, c sbx.Caller, ws sbx.Workspace, min sbx.Role, what string) (sbx.Role, error) {
	if err := inOrg(c, ws); err != nil {
		return "", err
	}
	return s.policy.In(ctx, c, ws, min, what)
}

// Projects lists the projects of ws that c reaches.
func (s *Service) Projects(ctx context.Context, c sbx.Caller, ws sbx.Workspace, p sbx.Page) ([]sbx.Project, string, error) {
	if _, err := s.RoleIn(ctx, c, ws, sbx.RoleMember, "listing projects"); err != nil {
		return nil, "", err
	}
	return s.store.WorkspaceProjects(ctx, ws.OrgID, ws.ID, c.Reach(), p)
}

// CreateProject makes a project, and its runtime, in ws.
func (s *Service) CreateProject(ctx context.Context, c sbx.Caller, ws sbx.Workspace, name string) (sbx.Project, error) {
	var p sbx.Project
	err := s.store.Atomically(ctx, func(ctx context.Context) error {
		_, err := s.RoleIn(ctx, c, ws, sbx.RoleAdmin, "creating a project")
		if err == nil {
			p, _, err = s.store.CreateProject(ctx, ws.OrgID, ws.ID, name, s.clock.Now())
		}
		return err
	})
	return p, err
}

// InProject answers c acting in project id (the ID of one it reaches) in
// place of its key's own project.
func (s *Service) InProject(ctx context.Context, c sbx.Caller, id string) (sbx.Caller, error) {
	return s.policy.InProject(ctx, c, id)
}
