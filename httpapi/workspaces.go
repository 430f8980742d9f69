package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// An org's workspaces and their projects, through the tenancy service:
// each key lists the workspaces it reaches and their projects; owners and
// admins make them.

func (s *Server) listWorkspaces(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	list, next, err := s.tenancy.Workspaces(r.Context(), caller(r), p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.WorkspaceList{Items: renderAll(list, renderWorkspace), NextCursor: next})
}

func (s *Server) createWorkspace(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	var body apiv1.CreateWorkspaceRequest
	if !s.decode(w, r, &body) {
		return
	}
	ws, err := s.tenancy.CreateWorkspace(r.Context(), caller(r), body.Name)
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
	ws, err := s.tenancy.Workspace(r.Context(), caller(r), r.PathValue("workspace"))
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
	role, err := s.tenancy.RoleIn(r.Context(), caller(r), ws, min, what)
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
	list, next, err := s.tenancy.Projects(r.Context(), caller(r), ws, p)
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
	p, err := s.tenancy.CreateProject(r.Context(), caller(r), ws, body.Name)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderProject(p))
}
