package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/ledger"
)

// summary answers the observability summary: usage per project, quota checks,
// provider and endpoint availability, and what to do next, in words.
func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	if err := onlyParams(r.URL.Query()); err != nil {
		s.error(w, r, err)
		return
	}
	c := caller(r)
	ctx := r.Context()
	projects, total, err := s.projectUsage(r, c)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.Summary{
		GeneratedAt: s.clock.Now(), Org: apiv1.Named{ID: c.Org.ID, Name: c.Org.Name}, Projects: projects,
		Quotas: s.quotas(total), Providers: []apiv1.ProviderStatus{}, NextActions: []string{},
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
	plan, err := s.planQuotas(r, c)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out.Quotas = append(out.Quotas, plan...)
	actions, err := s.nextActions(r, c, total)
	if err != nil {
		s.error(w, r, err)
		return
	}
	for _, q := range plan {
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

// quotas checks current use against this server's limits.
func (s *Server) quotas(u apiv1.Usage) []apiv1.Quota {
	max := s.mgr.Config().MaxTimeout
	qs := []apiv1.Quota{
		quota("running_vcpu", float64(s.cfg.HostCPUs), u.RunningCPU, "vCPU asked for by running sandboxes, against this host's cores (quotas are ceilings, so overcommit works but slows every sandbox)"),
		{Name: "max_timeout_seconds", Limit: max.Seconds(), Used: 0, OK: true, Detail: fmt.Sprintf("the longest timeout a sandbox may have: %s", max)},
		{Name: "max_cpu_per_sandbox", Limit: s.cfg.MaxCPU, OK: true, Detail: "the most vCPU one sandbox may ask for"},
		{Name: "max_memory_mb_per_sandbox", Limit: float64(s.cfg.MaxMemoryMB), OK: true, Detail: "the most memory one sandbox may ask for"},
	}
	if s.cfg.HostMemoryMB > 0 {
		qs = append(qs, quota("running_memory_mb", float64(s.cfg.HostMemoryMB), float64(u.RunningMemoryMB), "memory asked for by running sandboxes, against this host's memory"))
	}
	return qs
}

// planQuotas checks the org's use against its plan (limits it sets only)
// and its balance of credits.
func (s *Server) planQuotas(r *http.Request, c sbx.Caller) ([]apiv1.Quota, error) {
	ctx := r.Context()
	org, err := s.store.GetOrg(ctx, c.Org.ID)
	if err != nil {
		return nil, err
	}
	use, err := s.store.PlanUse(ctx, c.Org.ID)
	if err != nil {
		return nil, err
	}
	counts, err := s.store.MemberCounts(ctx, c.Org.ID)
	if err != nil {
		return nil, err
	}
	balance, err := s.store.Balance(ctx, c.Org.ID)
	if err != nil {
		return nil, err
	}
	p, qs := org.Plan, []apiv1.Quota{}
	add := func(name string, limit, used float64, detail string) {
		if limit > 0 {
			qs = append(qs, quota("plan_"+name, limit, used, detail+" (plan "+p.Name+")"))
		}
	}
	add("sandboxes", float64(p.MaxSandboxes), float64(use.Sandboxes), "sandboxes starting or running")
	add("vcpu", float64(p.MaxMilliCPU)/1000, float64(use.MilliCPU)/1000, "vCPU of sandboxes starting or running")
	add("memory_mb", float64(p.MaxMemoryMB), float64(use.MemoryMB), "memory of sandboxes starting or running")
	add("gpu_percent", float64(p.MaxGPUPercent), float64(use.GPUPercent), "GPU shares of sandboxes starting or running, in percent of a card")
	most := 0
	for _, n := range counts {
		most = max(most, n.Members)
	}
	add("members_per_workspace", float64(p.MaxMembers), float64(most), "members of the largest workspace; beyond the limit its sandboxes pause")
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
	failed, _, err := s.mgr.List(r.Context(), c, ledger.Filter{States: []sbx.State{sbx.StateFailed}, Limit: 100})
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
	if u.RunningCPU > float64(s.cfg.HostCPUs) {
		out = append(out, fmt.Sprintf("Running sandboxes ask for %g vCPU on a host with %d cores; pause or delete idle ones with `sbx sandbox pause ID` or `sbx sandbox delete ID --yes`.", u.RunningCPU, s.cfg.HostCPUs))
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
