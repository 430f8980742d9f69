package tenancy

import (
	"context"
	"math"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/pricing"
)

// The operator's orgs: making them, their plans, and the verification of
// orgs and users; and the KYC webhook's reports. Only the operator's key
// acts on orgs other than its own.

// PlanLimits is a plan as the operator states it: vCPU in cores, the
// timeout in seconds; a zero limit is no limit.
type PlanLimits struct {
	Name          string
	MaxSandboxes  int
	MaxVCPU       *float64
	MaxMemoryMB   int64
	MaxGPUPercent int
	MaxDiskMB     int64
	MaxMembers    int
	MaxTimeout    int64 // seconds
}

// plan checks l and turns it into a plan; field prefixes the names of its
// fields in problems ("plan." within an org).
func (l PlanLimits) plan(field string) (sbx.Plan, error) {
	var p sbx.Problems
	plan := sbx.Plan{Name: l.Name, MaxSandboxes: l.MaxSandboxes, MaxMemoryMB: l.MaxMemoryMB, MaxGPUPercent: l.MaxGPUPercent, MaxDiskMB: l.MaxDiskMB, MaxMembers: l.MaxMembers}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"max_sandboxes", int64(l.MaxSandboxes)}, {"max_memory_mb", l.MaxMemoryMB}, {"max_gpu_percent", int64(l.MaxGPUPercent)},
		{"max_members_per_workspace", int64(l.MaxMembers)}, {"max_timeout", l.MaxTimeout}, {"max_disk_mb", l.MaxDiskMB},
	} {
		if f.v < 0 {
			p.Add(field+f.name, "%s must be 0 (no limit) or more", field+f.name)
		}
	}
	if v := l.MaxVCPU; v != nil {
		if !(*v >= 0 && *v <= 1e6) {
			p.Add(field+"max_vcpu", "%smax_vcpu must be 0 (no limit) or a number of vCPU", field)
		} else {
			plan.MaxMilliCPU = int64(math.Round(*v * 1000))
		}
	}
	if l.MaxTimeout > 1<<31 {
		p.Add(field+"max_timeout", "%smax_timeout is too large", field)
	} else if l.MaxTimeout > 0 {
		plan.MaxTimeout = time.Duration(l.MaxTimeout) * time.Second
	}
	if len(l.Name) > 64 {
		p.Add(field+"name", "%sname must be at most 64 bytes", field)
	}
	return plan, p.Err()
}

// OrgSpec is an org to make.
type OrgSpec struct {
	Name      string
	KYCStatus sbx.KYCStatus // default unverified
	Plan      *PlanLimits   // default no limits
	Credits   string        // what it starts with, a decimal number of credits; "" none
}

// Orgs lists the orgs, for the operator.
func (s *Service) Orgs(ctx context.Context, c sbx.Caller, p sbx.Page) ([]sbx.Org, string, error) {
	if err := authz.Operator(c, "listing orgs"); err != nil {
		return nil, "", err
	}
	return s.store.Orgs(ctx, p)
}

// CreateOrg makes an org for the operator, with its default workspace and
// project and an org-wide key named "owner", whose secret it answers once.
func (s *Service) CreateOrg(ctx context.Context, c sbx.Caller, spec OrgSpec) (sbx.CreatedOrg, error) {
	if err := authz.Operator(c, "creating an org"); err != nil {
		return sbx.CreatedOrg{}, err
	}
	n := sbx.NewOrg{Name: spec.Name, KYCStatus: spec.KYCStatus, Key: sbx.APIKey{Name: "owner"}}
	if spec.Plan != nil {
		var err error
		if n.Plan, err = spec.Plan.plan("plan."); err != nil {
			return sbx.CreatedOrg{}, err
		}
	}
	if spec.Credits != "" {
		micros, err := pricing.ParseMicros(spec.Credits)
		if err != nil || micros == 0 {
			return sbx.CreatedOrg{}, sbx.Invalid("credits", "credits %q: want a positive decimal number with at most 6 decimals", spec.Credits)
		}
		n.Credits = micros
	}
	return s.store.CreateOrgWith(ctx, n, s.clock.Now())
}

// PlanChange is what replacing an org's plan did.
type PlanChange struct {
	Org     sbx.Org
	Paused  []sbx.Sandbox // paused: their workspace is now over its member limit
	Resumed []sbx.Sandbox // resumed: their workspace is back within it
}

// SetPlan replaces the plan of org (ID or name), for the operator, and
// applies its member limit to the org's workspaces at once.
func (s *Service) SetPlan(ctx context.Context, c sbx.Caller, org string, l PlanLimits) (PlanChange, error) {
	if err := authz.Operator(c, "changing an org's plan"); err != nil {
		return PlanChange{}, err
	}
	plan, err := l.plan("")
	if err != nil {
		return PlanChange{}, err
	}
	o, paused, resumed, err := s.compute.SetPlan(ctx, org, plan)
	return PlanChange{Org: o, Paused: paused, Resumed: resumed}, err
}

// checkStatus refuses a verification state that is none of the three.
func checkStatus(status sbx.KYCStatus) error {
	if status.Valid() {
		return nil
	}
	return sbx.Invalid("status", "status %q must be unverified, pending or verified", status)
}

// SetOrgVerification records, for the operator, how far org (ID or name)
// is through verification; the operator's word stands whenever it was
// decided.
func (s *Service) SetOrgVerification(ctx context.Context, c sbx.Caller, org string, status sbx.KYCStatus) (sbx.Org, error) {
	if err := authz.Operator(c, "verifying an org"); err != nil {
		return sbx.Org{}, err
	}
	if err := checkStatus(status); err != nil {
		return sbx.Org{}, err
	}
	o, _, err := s.store.SetOrgKYC(ctx, org, status, s.clock.Now(), false)
	return o, err
}

// SetUserVerification records, for the operator, how far user (ID or
// email) is through verification.
func (s *Service) SetUserVerification(ctx context.Context, c sbx.Caller, user string, status sbx.KYCStatus) (sbx.User, error) {
	if err := authz.Operator(c, "verifying a user"); err != nil {
		return sbx.User{}, err
	}
	if err := checkStatus(status); err != nil {
		return sbx.User{}, err
	}
	u, _, err := s.store.SetUserKYC(ctx, user, status, s.clock.Now(), false)
	return u, err
}

// Verification is an outside verification service's report on an org or a
// user, decided at At.
type Verification struct {
	Subject string // "org" or "user"
	ID      string // the org's ID or name, the user's ID or email
	Status  sbx.KYCStatus
	At      time.Time
}

// Verified is what a report left recorded.
type Verified struct {
	Subject, ID string
	Status      sbx.KYCStatus // the state recorded now
	Applied     bool          // false: a state decided after At was recorded already; nothing changed
}

// RecordVerification applies a verification service's report unless a
// state decided later is recorded already (a late or replayed report). It
// takes no caller: the surface has authenticated the service (the webhook's
// signature).
func (s *Service) RecordVerification(ctx context.Context, v Verification) (Verified, error) {
	var p sbx.Problems
	if !v.Status.Valid() {
		p.Add("status", "status %q must be unverified, pending or verified", v.Status)
	}
	if v.ID == "" {
		p.Add("id", "id is required: the org's ID or name, or the user's ID or email")
	}
	if v.Subject != "org" && v.Subject != "user" {
		p.Add("subject", "subject %q must be org or user", v.Subject)
	}
	if err := p.Err(); err != nil {
		return Verified{}, err
	}
	out := Verified{Subject: v.Subject}
	if v.Subject == "org" {
		o, applied, err := s.store.SetOrgKYC(ctx, v.ID, v.Status, v.At, true)
		out.ID, out.Status, out.Applied = o.ID, o.KYCStatus, applied
		return out, err
	}
	u, applied, err := s.store.SetUserKYC(ctx, v.ID, v.Status, v.At, true)
	out.ID, out.Status, out.Applied = u.ID, u.KYCStatus, applied
	return out, err
}
