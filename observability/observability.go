// Package observability is what a caller sees of its org and this host at
// a glance, for every surface: usage per project it reaches, the org's plan
// against its use, this host's capacity (cores, memory, disk) against what
// every org's sandboxes hold, the server's limits of one sandbox, provider
// availability, and what to do next, in words (the observability summary,
// docs/ARCHITECTURE.md, "Disk"). It answers domain values and *sbx.Errors;
// each surface renders them its own way.
package observability

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/lifecycle"
)

// Store is what the summary reads of the ledger; *ledger.Store satisfies it.
type Store interface {
	GetOrg(ctx context.Context, ref string) (sbx.Org, error)
	Projects(ctx context.Context, orgID string) ([]sbx.Project, error)
	PlanUse(ctx context.Context, orgID string) (sbx.PlanUse, error)
	MemberCounts(ctx context.Context, orgID string) (map[string]sbx.MemberCount, error)
	Balance(ctx context.Context, orgID string) (int64, error)
}

// Sandboxes is what the summary asks of the sandboxes' lifecycle;
// *lifecycle.Manager satisfies it.
type Sandboxes interface {
	Usage(ctx context.Context, c sbx.Caller) (map[string]*sbx.Usage, error)
	List(ctx context.Context, c sbx.Caller, f sbx.SandboxFilter) ([]sbx.Sandbox, string, error)
	Providers(ctx context.Context) []lifecycle.ProviderStatus
	HostUse(ctx context.Context) (sbx.PlanUse, error)
	Disk(ctx context.Context) (d sbx.Disk, ok bool, err error)
}

// Host is this host's capacity, for its quotas.
type Host struct {
	CPUs     int   // cores
	MemoryMB int64 // 0: unknown, no quota
}

// Limits are the server's limits of one sandbox, which the summary names.
type Limits struct {
	MaxTimeout    time.Duration
	MaxCPU        float64 // vCPU
	MaxMemoryMB   int64
	MaxDiskMB     int64 // the largest writable layer
	DefaultDiskMB int64 // a create's writable layer when it names none
}

// Service computes the summary.
type Service struct {
	Store     Store
	Sandboxes Sandboxes
	Policy    authz.Policy
	Host      Host
	Limits    Limits
	Clock     sbx.Clock
	Log       *slog.Logger
}

// ProjectUsage sums the sandboxes of one project.
type ProjectUsage struct {
	Project sbx.Project
	Usage   sbx.Usage
}

// Quota is one limit against the use it bounds.
type Quota struct {
	Name        string
	Limit, Used float64
	OK          bool
	Detail      string
}

// Disk is the filesystem the default provider keeps sandboxes on, in MiB.
type Disk struct {
	TotalMB, FreeMB     int64
	ReservedBySandboxes int64 // what running and paused sandboxes may still write
	ReserveMB           int64 // kept free for the host
	AvailableMB         int64 // the largest disk a create may ask for now
}

// Summary is the observability summary.
type Summary struct {
	GeneratedAt time.Time
	Org         sbx.Org        // as it is now, its plan included
	Projects    []ProjectUsage // the projects the caller reaches, by name
	Total       sbx.Usage      // of the caller's sandboxes
	Providers   []lifecycle.ProviderStatus
	// CreatesAccepted: the default provider is available.
	CreatesAccepted bool
	// Quotas: plan_* the org's plan against its sandboxes, host_* this
	// host's capacity against every org's sandboxes on it, credits the
	// org's balance, then max_* the server's limits of one sandbox.
	Quotas      []Quota
	Disk        *Disk // nil where the default provider keeps no disk
	NextActions []string
}

// Summary is the caller's summary: see the package comment. Any caller may
// read it; it shows only the projects and sandboxes the caller reaches.
func (s Service) Summary(ctx context.Context, c sbx.Caller) (Summary, error) {
	projects, total, err := s.Usage(ctx, c)
	if err != nil {
		return Summary{}, err
	}
	org, err := s.Store.GetOrg(ctx, c.Org.ID) // the plan as it is now, not as the key was read
	if err != nil {
		return Summary{}, err
	}
	out := Summary{GeneratedAt: s.Clock.Now(), Org: org, Projects: projects, Total: total, NextActions: []string{}}
	for _, p := range s.Sandboxes.Providers(ctx) {
		out.Providers = append(out.Providers, p)
		if p.Default {
			out.CreatesAccepted = p.Available
			if !p.Available {
				out.NextActions = append(out.NextActions, fmt.Sprintf("No sandbox can start: the default provider %q is not available (%s).", p.Name, p.Detail))
			}
		}
	}
	plan, err := s.planQuotas(ctx, org)
	if err != nil {
		return Summary{}, err
	}
	host, err := s.hostQuotas(ctx, &out)
	if err != nil {
		return Summary{}, err
	}
	out.Quotas = append(append(plan, host...), s.serverLimits()...)
	actions, err := s.nextActions(ctx, c, total)
	if err != nil {
		return Summary{}, err
	}
	for _, q := range out.Quotas {
		if !q.OK {
			out.NextActions = append(out.NextActions, fmt.Sprintf("Over quota %s: %s (%g of %g).", q.Name, q.Detail, q.Used, q.Limit))
		}
	}
	out.NextActions = append(out.NextActions, actions...)
	if len(out.NextActions) == 0 {
		out.NextActions = append(out.NextActions, "All clear. Create a sandbox with `sbx sandbox create base`, or list yours with `sbx sandbox list`.")
	}
	return out, nil
}

// Usage is the caller's usage per project it reaches, by project name, and
// its total: an org-wide key's every project, a project key's own, a
// member's key's those of the workspaces its user belongs to.
func (s Service) Usage(ctx context.Context, c sbx.Caller) ([]ProjectUsage, sbx.Usage, error) {
	us, err := s.Sandboxes.Usage(ctx, c)
	if err != nil {
		return nil, sbx.Usage{}, err
	}
	projects, err := s.Store.Projects(ctx, c.Org.ID)
	if err != nil {
		return nil, sbx.Usage{}, err
	}
	out, roles := []ProjectUsage{}, map[string]sbx.Role{} // the caller's role per workspace
	for _, p := range projects {
		if !c.OrgWide() && p.ID != c.Key.ProjectID {
			continue
		}
		if _, known := roles[p.WorkspaceID]; !known {
			if roles[p.WorkspaceID], err = s.Policy.WorkspaceRole(ctx, c, p.WorkspaceID); err != nil {
				return nil, sbx.Usage{}, err
			}
		}
		if roles[p.WorkspaceID] == "" {
			continue // a member's key: not a member there
		}
		pu := ProjectUsage{Project: p}
		if u := us[p.ID]; u != nil {
			pu.Usage = *u
		}
		out = append(out, pu)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Project.Name < out[j].Project.Name })
	return out, sbx.TotalUsage(us), nil
}

// serverLimits are this server's limits of one sandbox: nothing to use up.
func (s Service) serverLimits() []Quota {
	max, l := s.Limits.MaxTimeout, s.Limits
	return []Quota{
		{Name: "max_timeout_seconds", Limit: max.Seconds(), Used: 0, OK: true, Detail: fmt.Sprintf("the longest timeout a sandbox may have: %s", max)},
		{Name: "max_cpu_per_sandbox", Limit: l.MaxCPU, OK: true, Detail: "the most vCPU one sandbox may ask for"},
		{Name: "max_memory_mb_per_sandbox", Limit: float64(l.MaxMemoryMB), OK: true, Detail: "the most memory one sandbox may ask for"},
		{Name: "max_disk_mb_per_sandbox", Limit: float64(l.MaxDiskMB), OK: true,
			Detail: fmt.Sprintf("the largest writable layer one sandbox may ask for (diskMB; default %d)", l.DefaultDiskMB)},
	}
}

// hostQuotas checks this host's capacity against what the sandboxes of
// every org on its default provider hold, and reports its disk in out (a
// disk that cannot be measured is a next action, not an error).
func (s Service) hostQuotas(ctx context.Context, out *Summary) ([]Quota, error) {
	use, err := s.Sandboxes.HostUse(ctx)
	if err != nil {
		return nil, err
	}
	qs := []Quota{
		quota("host_vcpu", float64(s.Host.CPUs), float64(use.MilliCPU)/1000, "vCPU asked for by the sandboxes of every org starting or running on this host, against its cores (quotas are ceilings, so overcommit works but slows every sandbox)"),
	}
	if s.Host.MemoryMB > 0 {
		qs = append(qs, quota("host_memory_mb", float64(s.Host.MemoryMB), float64(use.MemoryMB), "memory asked for by the sandboxes of every org starting or running on this host, against its memory"))
	}
	d, ok, err := s.Sandboxes.Disk(ctx)
	if err != nil {
		if s.Log != nil {
			s.Log.Warn("measuring the disk for the summary", "err", err)
		}
		out.NextActions = append(out.NextActions, "The disk of this host could not be measured: "+sbx.ErrorMessage(err))
	}
	if !ok {
		return qs, nil
	}
	disk := &Disk{TotalMB: d.Total >> 20, FreeMB: d.Free >> 20, ReservedBySandboxes: d.Committed >> 20, ReserveMB: d.Reserve >> 20}
	room := max(disk.FreeMB-disk.ReserveMB, 0)
	disk.AvailableMB = max(room-disk.ReservedBySandboxes, 0)
	out.Disk = disk
	qs = append(qs, quota("host_disk_mb", float64(room), float64(disk.ReservedBySandboxes),
		"what the running and paused sandboxes of every org may still write to their layers (caps less what they hold), against this host's free disk less its reserve; a create or resume that would pass it is refused (507)"))
	if def := s.Limits.DefaultDiskMB; disk.AvailableMB < def {
		out.NextActions = append(out.NextActions, fmt.Sprintf("This host's disk has room for a sandbox of at most %d MB (diskMB; the default is %d): delete sandboxes you no longer need (a paused one keeps its disk), or ask the operator for room.",
			disk.AvailableMB, def))
	}
	return qs, nil
}

// planQuotas checks the org's use against its plan (limits it sets only)
// and its balance of credits.
func (s Service) planQuotas(ctx context.Context, org sbx.Org) ([]Quota, error) {
	use, err := s.Store.PlanUse(ctx, org.ID)
	if err != nil {
		return nil, err
	}
	counts, err := s.Store.MemberCounts(ctx, org.ID)
	if err != nil {
		return nil, err
	}
	balance, err := s.Store.Balance(ctx, org.ID)
	if err != nil {
		return nil, err
	}
	p, qs := org.Plan, []Quota{}
	plan := "the org's plan"
	if p.Name != "" {
		plan = "plan " + p.Name
	}
	add := func(name string, limit, used float64, detail string) {
		if limit > 0 {
			qs = append(qs, quota("plan_"+name, limit, used, detail+" ("+plan+")"))
		}
	}
	add("sandboxes", float64(p.MaxSandboxes), float64(use.Sandboxes), "the org's sandboxes starting or running")
	add("vcpu", float64(p.MaxMilliCPU)/1000, float64(use.MilliCPU)/1000, "vCPU of the org's sandboxes starting or running")
	add("memory_mb", float64(p.MaxMemoryMB), float64(use.MemoryMB), "memory of the org's sandboxes starting or running")
	add("gpu_percent", float64(p.MaxGPUPercent), float64(use.GPUPercent), "GPU shares of the org's sandboxes starting or running, in percent of a card")
	add("disk_mb", float64(p.MaxDiskMB), float64(use.DiskMB), "writable-layer caps of the org's sandboxes starting, running or paused (a paused one keeps its disk until it is killed)")
	most := 0
	for _, n := range counts {
		most = max(most, n.Members)
	}
	add("members_per_workspace", float64(p.MaxMembers), float64(most), "members of the org's largest workspace; beyond the limit its sandboxes pause")
	add("max_timeout_seconds", p.MaxTimeout.Seconds(), 0, "the longest timeout a sandbox may have")
	credits := float64(balance) / 1e6
	qs = append(qs, Quota{Name: "credits", Limit: credits, Used: 0, OK: balance > 0,
		Detail: "credits left; at none, running sandboxes pause (insufficient_credits) and creates and resumes are refused until a top-up"})
	return qs, nil
}

func quota(name string, limit, used float64, detail string) Quota {
	return Quota{Name: name, Limit: limit, Used: used, OK: used <= limit, Detail: detail}
}

// nextActions says in plain words what the caller could do next about its
// sandboxes: those that failed in the last 24 hours, those paused.
func (s Service) nextActions(ctx context.Context, c sbx.Caller, total sbx.Usage) ([]string, error) {
	var out []string
	since := s.Clock.Now().Add(-24 * time.Hour)
	failed, _, err := s.Sandboxes.List(ctx, c, sbx.SandboxFilter{States: []sbx.State{sbx.StateFailed}, Limit: 100})
	if err != nil {
		return nil, err
	}
	recent := 0
	for _, sb := range failed {
		if sb.CreatedAt.After(since) {
			recent++
		}
	}
	if recent > 0 {
		out = append(out, fmt.Sprintf("%d sandbox(es) failed in the last 24 hours; read why with `sbx sandbox get %s` (the diagnostic field) and `sbx sandbox logs %s`.", recent, failed[0].ProviderSandboxID, failed[0].ProviderSandboxID))
	}
	if n := total.ByState[sbx.StatePaused]; n > 0 {
		out = append(out, fmt.Sprintf("%d paused sandbox(es) keep their state; resume with `sbx sandbox resume ID` or delete with `sbx sandbox delete ID --yes`.", n))
	}
	return out, nil
}
