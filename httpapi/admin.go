package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/tenancy"
)

// The operator's routes: orgs, their plans, and the verification of orgs
// and users, through the tenancy service. Only the operator's key may call
// them: the service refuses every other, and the handlers before reading a
// body.

func (s *Server) listOrgs(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	orgs, next, err := s.tenancy.Orgs(r.Context(), caller(r), p)
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
	spec := tenancy.OrgSpec{Name: body.Name, KYCStatus: sbx.KYCStatus(body.KYCStatus), Credits: body.Credits}
	if body.Plan != nil {
		l := planLimits(*body.Plan)
		spec.Plan = &l
	}
	c, err := s.tenancy.CreateOrg(r.Context(), caller(r), spec)
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
	ch, err := s.tenancy.SetPlan(r.Context(), caller(r), r.PathValue("org"), planLimits(body))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.PlanChange{Org: renderOrg(ch.Org), Paused: providerIDs(ch.Paused), Resumed: providerIDs(ch.Resumed)})
}

// planLimits is a plan body's limits.
func planLimits(b apiv1.SetPlanRequest) tenancy.PlanLimits {
	return tenancy.PlanLimits{Name: b.Name, MaxSandboxes: b.MaxSandboxes, MaxVCPU: b.MaxVCPU, MaxMemoryMB: b.MaxMemoryMB,
		MaxGPUPercent: b.MaxGPUPercent, MaxDiskMB: b.MaxDiskMB, MaxMembers: b.MaxMembers, MaxTimeout: b.MaxTimeout}
}

func (s *Server) setOrgVerification(w http.ResponseWriter, r *http.Request) {
	status, ok := s.verification(w, r)
	if !ok {
		return
	}
	o, err := s.tenancy.SetOrgVerification(r.Context(), caller(r), r.PathValue("org"), status)
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
	u, err := s.tenancy.SetUserVerification(r.Context(), caller(r), r.PathValue("user"), status)
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
	return sbx.KYCStatus(body.Status), true
}
