package httpapi

import (
	"net/http"
	"net/url"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// What the tenancy handlers (admin.go, workspaces.go, members.go, keys.go)
// share: pages and rendering.

// parsePage reads the limit and cursor of a tenancy list.
func parsePage(q url.Values) (sbx.Page, error) {
	limit, err := parseLimit(q)
	return sbx.Page{Limit: limit, Cursor: q.Get("cursor")}, err
}

// page answers a list's first page unless parsing the query failed.
func (s *Server) page(w http.ResponseWriter, r *http.Request) (sbx.Page, bool) {
	p, err := parsePage(r.URL.Query())
	if err != nil {
		s.error(w, r, err)
		return p, false
	}
	return p, true
}

func renderPlan(p sbx.Plan) apiv1.Plan {
	return apiv1.Plan{Name: p.Name, MaxSandboxes: p.MaxSandboxes, MaxVCPU: float64(p.MaxMilliCPU) / 1000, MaxMemoryMB: p.MaxMemoryMB,
		MaxGPUPercent: p.MaxGPUPercent, MaxDiskMB: p.MaxDiskMB, MaxMembers: p.MaxMembers, MaxTimeout: int64(p.MaxTimeout / time.Second)}
}

func renderOrg(o sbx.Org) apiv1.Org {
	return apiv1.Org{ID: o.ID, Name: o.Name, KYCStatus: string(o.KYCStatus), Plan: renderPlan(o.Plan), CreatedAt: o.CreatedAt}
}

func renderUser(u sbx.User) apiv1.User {
	return apiv1.User{ID: u.ID, Email: u.Email, Name: u.Name, KYCStatus: string(u.KYCStatus), CreatedAt: u.CreatedAt}
}

func renderWorkspace(ws sbx.Workspace) apiv1.Workspace {
	return apiv1.Workspace{ID: ws.ID, Name: ws.Name, CreatedAt: ws.CreatedAt}
}

func renderProject(p sbx.Project) apiv1.Project {
	return apiv1.Project{ID: p.ID, Name: p.Name, WorkspaceID: p.WorkspaceID, RuntimeID: p.RuntimeID, CreatedAt: p.CreatedAt}
}

func renderMember(m sbx.Member) apiv1.Member {
	return apiv1.Member{User: renderUser(m.User), Role: string(m.Role), WorkspaceID: m.WorkspaceID, CreatedAt: m.CreatedAt}
}

func renderKey(k sbx.APIKey) apiv1.APIKey {
	return apiv1.APIKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Scope: k.Scope(), ProjectID: k.ProjectID, UserID: k.UserID,
		Operator: k.Operator, CreatedAt: k.CreatedAt, RevokedAt: timePtr(k.RevokedAt)}
}

// providerIDs lists sandboxes by provider sandbox ID, never nil.
func providerIDs(sbs []sbx.Sandbox) []string {
	out := []string{}
	for _, sb := range sbs {
		out = append(out, sb.ProviderSandboxID)
	}
	return out
}
