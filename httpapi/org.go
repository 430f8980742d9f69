package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/authz"
)

// The org ledger view: the same sandboxes, addressed under their org and by
// provider sandbox ID, as the `sbx sandbox` commands use them.

// inOrg checks that the {org} of the path (ID or name) is the caller's; any
// other org is not found, whether it exists or not.
func (s *Server) inOrg(w http.ResponseWriter, r *http.Request) bool {
	if err := authz.InOrg(caller(r), r.PathValue("org")); err != nil {
		s.error(w, r, err)
		return false
	}
	return true
}

func (s *Server) orgSandboxes(w http.ResponseWriter, r *http.Request) {
	if s.inOrg(w, r) {
		s.list(w, r)
	}
}

func (s *Server) orgGetSandbox(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	sb, err := s.mgr.Get(r.Context(), caller(r), r.PathValue("provider_sandbox_id"))
	s.answer(w, r, sb, err)
}

func (s *Server) orgDeleteSandbox(w http.ResponseWriter, r *http.Request) {
	if s.inOrg(w, r) {
		s.kill(w, r, r.PathValue("provider_sandbox_id"))
	}
}

func (s *Server) orgSandboxLogs(w http.ResponseWriter, r *http.Request) {
	if s.inOrg(w, r) {
		s.logs(w, r, r.PathValue("provider_sandbox_id"))
	}
}

func (s *Server) orgUsage(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	c := caller(r)
	projects, total, err := s.projectUsage(r, c)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.OrgUsage{Org: apiv1.Named{ID: c.Org.ID, Name: c.Org.Name}, Total: total, Projects: projects})
}

// projectUsage is the caller's usage per visible project, by project name,
// and its total (package observability decides what it reaches).
func (s *Server) projectUsage(r *http.Request, c sbx.Caller) ([]apiv1.ProjectUsage, apiv1.Usage, error) {
	projects, total, err := s.observability.Usage(r.Context(), c)
	if err != nil {
		return nil, apiv1.Usage{}, err
	}
	out := []apiv1.ProjectUsage{}
	for _, p := range projects {
		out = append(out, apiv1.ProjectUsage{Project: apiv1.Named{ID: p.Project.ID, Name: p.Project.Name}, Usage: s.usage(&p.Usage)})
	}
	return out, s.usage(&total), nil
}
