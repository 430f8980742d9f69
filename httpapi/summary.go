package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// summary answers the observability summary: usage per project, the org's
// plan and use against it, this host's capacity and use against it (disk
// included), provider and endpoint availability, and what to do next, in
// words.
func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	c := caller(r)
	ctx := r.Context()
	projects, total, err := s.projectUsage(r, c)
	if err != nil {
		s.error(w, r, err)
		return
	}
	org, err := s.store.GetOrg(ctx, c.Org.ID) // the plan as it is now, not as the key was read
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.Summary{
		GeneratedAt: s.clock.Now(), Org: apiv1.Named{ID: org.ID, Name: org.Name}, Plan: renderPlan(org.Plan), Projects: projects,
		Providers: []apiv1.ProviderStatus{}, NextActions: []string{},
		Engines: append([]apiv1.EngineStatus{}, s.cfg.Engines...),
	}
	var defaultOK bool
	for _, p := range s.mgr.Providers(ctx) {
		caps := p.Capabilities
		out.Providers = append(out.Providers, apiv1.ProviderStatus{
			Name: p.Name, Available: p.Available, Default: p.Default, Detail: p.Detail,
			Capabilities: apiv1.Capabilities{MemoryPause: caps.MemoryPause, Hibernate: caps.Hibernate, Fork: caps.Fork, Snapshots: caps.Snapshots, GPU: caps.GPU},
		})
		if p.Default {
			defaultOK = p.Available
			if !p.Available {
				out.NextActions = append(out.NextActions, fmt.Sprintf("No sandbox can start: the default provider %q is not available (%s).", p.Name, p.Detail))
			}
		}
	}
	out.Endpoints = []apiv1.EndpointStatus{
		{Name: "api", URL: s.cfg.PublicURL + "/api/v1", Available: true, Detail: "serving"},
		{Name: "openapi", URL: s.cfg.PublicURL + "/api/v1/openapi.json", Available: true, Detail: "serving"},
		{Name: "sandbox create", URL: s.cfg.PublicURL + "/api/v1/sandboxes", Available: defaultOK, Detail: availability(defaultOK, "accepting creates", "the default provider is not available")},
	}
	plan, err := s.planQuotas(r, org)
	if err != nil {
		s.error(w, r, err)
		return
	}
	host, err := s.hostQuotas(r, &out)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out.Quotas = append(append(plan, host...), s.serverLimits()...)
	actions, err := s.nextActions(r, c, total)
	if err != nil {
		s.error(w, r, err)
		return
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
	writeJSON(w, http.StatusOK, out)
}

// serverLimits are this server's limits of one sandbox: nothing to use up.
func (s *Server) serverLimits() []apiv1.Quota {
	max := s.mgr.Config().MaxTimeout
	return []apiv1.Quota{
		{Name: "max_timeout_seconds", Limit: max.Seconds(), Used: 0, OK: true, Detail: fmt.Sprintf("the longest timeout a sandbox may have: %s", max)},
		{Name: "max_cpu_per_sandbox", Limit: s.cfg.MaxCPU, OK: true, Detail: "the most vCPU one sandbox may ask for"},
		{Name: "max_memory_mb_per_sandbox", Limit: float64(s.cfg.MaxMemoryMB), OK: true, Detail: "the most memory one sandbox may ask for"},
		{Name: "max_disk_mb_per_sandbox", Limit: float64(s.cfg.MaxDiskMB), OK: true,
			Detail: fmt.Sprintf("the largest writable layer one sandbox may ask for (diskMB; default %d)", s.cfg.DefaultDiskMB)},
	}
}

// hostQuotas checks this host's capacity against what the sandboxes of
// every org on its default provider hold, and reports its disk in out.
func (s *Server) hostQuotas(r *http.Request, out *apiv1.Summary) ([]apiv1.Quota, error) {
	ctx := r.Context()
	use, err := s.mgr.HostUse(ctx)
	if err != nil {
		return nil, err
	}
	qs := []apiv1.Quota{
		quota("host_vcpu", float64(s.cfg.HostCPUs), float64(use.MilliCPU)/1000, "vCPU asked for by the sandboxes of every org starting or running on this host, against its cores (quotas are ceilings, so overcommit works but slows every sandbox)"),
	}
	if s.cfg.HostMemoryMB > 0 {
		qs = append(qs, quota("host_memory_mb", float64(s.cfg.HostMemoryMB), float64(use.MemoryMB), "memory asked for by the sandboxes of every org starting or running on this host, against its memory"))
	}
	d, ok, err := s.mgr.Disk(ctx)
	if err != nil {
		s.log.Warn("measuring the disk for the summary", "err", err)
		out.NextActions = append(out.NextActions, "The disk of this host could not be measured: "+sbx.ErrorMessage(err))
	}
	if !ok {
		return qs, nil
	}
	disk := &apiv1.DiskStatus{TotalMB: d.Total >> 20, FreeMB: d.Free >> 20, ReservedBySandboxes: d.Committed >> 20, ReserveMB: d.Reserve >> 20}
	room := max(disk.FreeMB-disk.ReserveMB, 0)
	disk.AvailableMB = max(room-disk.ReservedBySandboxes, 0)
	out.Disk = disk
	qs = append(qs, quota("host_disk_mb", float64(room), float64(disk.ReservedBySandboxes),
		"what the running and paused sandboxes of every org may still write to their layers (caps less what they hold), against this host's free disk less its reserve; a create or resume that would pass it is refused (507)"))
	if out.Disk.AvailableMB < s.cfg.DefaultDiskMB {
		out.NextActions = append(out.NextActions, fmt.Sprintf("This host's disk has room for a sandbox of at most %d MB (diskMB; the default is %d): delete sandboxes you no longer need (a paused one keeps its disk), or ask the operator for room.",
			out.Disk.AvailableMB, s.cfg.DefaultDiskMB))
	}
	return qs, nil
}

// planQuotas checks the org's use against its plan (limits it sets only)
// and its balance of credits.
func (s *Server) planQuotas(r *http.Request, org sbx.Org) ([]apiv1.Quota, error) {
	ctx := r.Context()
	use, err := s.store.PlanUse(ctx, org.ID)
	if err != nil {
		return nil, err
	}
	counts, err := s.store.MemberCounts(ctx, org.ID)
	if err != nil {
		return nil, err
	}
	balance, err := s.store.Balance(ctx, org.ID)
	if err != nil {
		return nil, err
	}
	p, qs := org.Plan, []apiv1.Quota{}
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
	qs = append(qs, apiv1.Quota{Name: "credits", Limit: credits, Used: 0, OK: balance > 0,
		Detail: "credits left; at none, running sandboxes pause (insufficient_credits) and creates and resumes are refused until a top-up"})
	return qs, nil
}

func quota(name string, limit, used float64, detail string) apiv1.Quota {
	return apiv1.Quota{Name: name, Limit: limit, Used: used, OK: used <= limit, Detail: detail}
}

// nextActions says in plain words what the caller could do next.
func (s *Server) nextActions(r *http.Request, c sbx.Caller, u apiv1.Usage) ([]string, error) {
	var out []string
	since := s.clock.Now().Add(-24 * time.Hour)
	failed, _, err := s.mgr.List(r.Context(), c, sbx.SandboxFilter{States: []sbx.State{sbx.StateFailed}, Limit: 100})
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
	if n := u.ByState[string(sbx.StatePaused)]; n > 0 {
		out = append(out, fmt.Sprintf("%d paused sandbox(es) keep their state; resume with `sbx sandbox resume ID` or delete with `sbx sandbox delete ID --yes`.", n))
	}
	return out, nil
}

func availability(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}
