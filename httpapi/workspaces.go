package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/authz"
)

// An org's workspaces and their projects. Each key lists the workspaces it
// reaches (a member's key its user's, a project's key its project's) and
// their projects (a project's key only its own); owners and admins make
// them.

func (s *Server) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	c := caller(r)
	list, next, err := s.store.Workspaces(r.Context(), c.Org.ID, c.Reach(), p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.WorkspaceList{Items: renderAll(list, renderWorkspace), NextCursor: next})
}

// createWorkspace makes a workspace with a default project; a member's key
// makes its user a member of it, with the user's role in the org.
func (s *Server) createWorkspace(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	c := caller(r)
	var body apiv1.CreateWorkspaceRequest
	if !s.decode(w, r, &body) {
		return
	}
	if err := authz.Need(c, sbx.RoleAdmin, "creating a workspace"); err != nil {
		s.error(w, r, err)
		return
	}
	ws, _, err := s.store.CreateWorkspace(r.Context(), c.Org.ID, body.Name, c.User.ID, c.Role, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderWorkspace(ws))
}

// workspace finds the {workspace} of the path in the caller's org; on
// failure it has answered.
func (s *Server) workspace(w http.ResponseWriter, r *http.Request) (sbx.Workspace, bool) {
	if !s.inOrg(w, r) {
		return sbx.Workspace{}, false
	}
	ws, err := s.store.GetWorkspace(r.Context(), caller(r).Org.ID, r.PathValue("workspace"))
	if err != nil {
		s.error(w, r, err)
		return ws, false
	}
	return ws, true
}

// roleIn checks that the caller acts with at least role min in workspace ws
// (what names the action) and answers the role it acts with there; on
// failure it has answered.
func (s *Server) roleIn(w http.ResponseWriter, r *http.Request, ws sbx.Workspace, min sbx.Role, what string) (sbx.Role, bool) {
	role, err := s.policy.In(r.Context(), caller(r), ws, min, what)
	if err != nil {
		s.error(w, r, err)
		return role, false
	}
	return role, true
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	if _, ok := s.roleIn(w, r, ws, sbx.RoleMember, "listing projects"); !ok {
		return
	}
	list, next, err := s.store.WorkspaceProjects(r.Context(), ws.OrgID, ws.ID, caller(r).Reach(), p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.ProjectList{Items: renderAll(list, renderProject), NextCursor: next})
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	var body apiv1.CreateProjectRequest
	if !s.decode(w, r, &body) {
		return
	}
	if _, ok := s.roleIn(w, r, ws, sbx.RoleAdmin, "creating a project"); !ok {
		return
	}
	p, _, err := s.store.CreateProject(r.Context(), ws.OrgID, ws.ID, body.Name, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderProject(p))
}
