package httpapi

import (
	"math"
	"net/http"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// The operator's routes: orgs, their plans, and the verification of orgs
// and users. Only the operator's key may call them.

func (s *Server) listOrgs(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	orgs, next, err := s.store.Orgs(r.Context(), p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.OrgList{Items: renderAll(orgs, renderOrg), NextCursor: next})
}

func (s *Server) createOrg(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	var body apiv1.CreateOrgRequest
	if !s.decode(w, r, &body) {
		return
	}
	n := sbx.NewOrg{Name: body.Name, KYCStatus: sbx.KYCStatus(body.KYCStatus), Key: sbx.APIKey{Name: "owner"}}
	if body.Plan != nil {
		var err error
		if n.Plan, err = parsePlan(*body.Plan, "plan."); err != nil {
			s.error(w, r, err)
			return
		}
	}
	if body.Credits != "" {
		var err error
		if n.Credits, err = parseCredits(body.Credits); err != nil {
			s.error(w, r, err)
			return
		}
	}
	c, err := s.store.CreateOrgWith(r.Context(), n, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, apiv1.CreatedOrg{Org: renderOrg(c.Org), Workspace: renderWorkspace(c.Workspace),
		Project: renderProject(c.Project), Key: renderKey(c.Key), Secret: c.Secret})
}

func (s *Server) setPlan(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	var body apiv1.SetPlanRequest
	if !s.decode(w, r, &body) {
		return
	}
	plan, err := parsePlan(body, "")
	if err != nil {
		s.error(w, r, err)
		return
	}
	o, paused, resumed, err := s.mgr.SetPlan(r.Context(), r.PathValue("org"), plan)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.PlanChange{Org: renderOrg(o), Paused: providerIDs(paused), Resumed: providerIDs(resumed)})
}

// parsePlan turns a plan body into limits; field names its fields' prefix.
func parsePlan(b apiv1.SetPlanRequest, field string) (sbx.Plan, error) {
	var p problems
	plan := sbx.Plan{Name: b.Name, MaxSandboxes: b.MaxSandboxes, MaxMemoryMB: b.MaxMemoryMB, MaxGPUPercent: b.MaxGPUPercent, MaxDiskMB: b.MaxDiskMB, MaxMembers: b.MaxMembers}
	for _, l := range []struct {
		name string
		v    int64
	}{
		{"max_sandboxes", int64(b.MaxSandboxes)}, {"max_memory_mb", b.MaxMemoryMB}, {"max_gpu_percent", int64(b.MaxGPUPercent)},
		{"max_members_per_workspace", int64(b.MaxMembers)}, {"max_timeout", b.MaxTimeout}, {"max_disk_mb", b.MaxDiskMB},
	} {
		if l.v < 0 {
			p.Add(field+l.name, "%s must be 0 (no limit) or more", field+l.name)
		}
	}
	if v := b.MaxVCPU; v != nil {
		if !(*v >= 0 && *v <= 1e6) {
			p.Add(field+"max_vcpu", "%smax_vcpu must be 0 (no limit) or a number of vCPU", field)
		} else {
			plan.MaxMilliCPU = int64(math.Round(*v * 1000))
		}
	}
	if b.MaxTimeout > 1<<31 {
		p.Add(field+"max_timeout", "%smax_timeout is too large", field)
	} else if b.MaxTimeout > 0 {
		plan.MaxTimeout = time.Duration(b.MaxTimeout) * time.Second
	}
	if len(b.Name) > 64 {
		p.Add(field+"name", "%sname must be at most 64 bytes", field)
	}
	return plan, p.Err()
}

func (s *Server) setOrgVerification(w http.ResponseWriter, r *http.Request) {
	status, ok := s.verification(w, r)
	if !ok {
		return
	}
	o, _, err := s.store.SetOrgKYC(r.Context(), r.PathValue("org"), status, s.clock.Now(), false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderOrg(o))
}

func (s *Server) setUserVerification(w http.ResponseWriter, r *http.Request) {
	status, ok := s.verification(w, r)
	if !ok {
		return
	}
	u, _, err := s.store.SetUserKYC(r.Context(), r.PathValue("user"), status, s.clock.Now(), false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderUser(u))
}

// verification reads the body of a verification change by the operator.
func (s *Server) verification(w http.ResponseWriter, r *http.Request) (sbx.KYCStatus, bool) {
	if !s.operator(w, r) {
		return "", false
	}
	var body apiv1.VerificationRequest
	if !s.decode(w, r, &body) {
		return "", false
	}
	status := sbx.KYCStatus(body.Status)
	if !status.Valid() {
		s.error(w, r, sbx.Invalid("status", "status %q must be unverified, pending or verified", body.Status))
		return "", false
	}
	return status, true
}
