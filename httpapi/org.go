package httpapi

import (
	"net/http"
	"sort"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// The org ledger view: the same sandboxes, addressed under their org and by
// provider sandbox ID, as the `sbx sandbox` commands use them.

// inOrg checks that the {org} of the path (ID or name) is the caller's; any
// other org is not found, whether it exists or not.
func (s *Server) inOrg(w http.ResponseWriter, r *http.Request) bool {
	c, org := caller(r), r.PathValue("org")
	if org == c.Org.ID || org == c.Org.Name {
		return true
	}
	s.error(w, r, sbx.Errorf(sbx.ENotFound, "org %s not found", org))
	return false
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
// and its total.
func (s *Server) projectUsage(r *http.Request, c sbx.Caller) ([]apiv1.ProjectUsage, apiv1.Usage, error) {
	us, err := s.mgr.Usage(r.Context(), c)
	if err != nil {
		return nil, apiv1.Usage{}, err
	}
	projects, err := s.store.Projects(r.Context(), c.Org.ID)
	if err != nil {
		return nil, apiv1.Usage{}, err
	}
	out, roles := []apiv1.ProjectUsage{}, map[string]sbx.Role{} // the caller's role per workspace
	for _, p := range projects {
		if !c.OrgWide() && p.ID != c.Key.ProjectID {
			continue
		}
		if _, known := roles[p.WorkspaceID]; !known {
			if roles[p.WorkspaceID], err = s.policy.WorkspaceRole(r.Context(), c, p.WorkspaceID); err != nil {
				return nil, apiv1.Usage{}, err
			}
		}
		if roles[p.WorkspaceID] == "" {
			continue // a member's key: not a member there
		}
		out = append(out, apiv1.ProjectUsage{Project: apiv1.Named{ID: p.ID, Name: p.Name}, Usage: s.usage(us[p.ID])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Project.Name < out[j].Project.Name })
	t := sbx.TotalUsage(us)
	return out, s.usage(&t), nil
}
