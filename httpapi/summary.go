package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx/apiv1"
)

// summary answers the observability summary (package observability
// computes it): usage per project, the org's plan and use against it, this
// host's capacity and use against it (disk included), provider and
// endpoint availability, and what to do next, in words.
func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	sum, err := s.observability.Summary(r.Context(), caller(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.Summary{
		GeneratedAt: sum.GeneratedAt, Org: apiv1.Named{ID: sum.Org.ID, Name: sum.Org.Name}, Plan: renderPlan(sum.Org.Plan),
		Projects: []apiv1.ProjectUsage{}, Quotas: []apiv1.Quota{}, Providers: []apiv1.ProviderStatus{},
		Engines: append([]apiv1.EngineStatus{}, s.cfg.Engines...), NextActions: append([]string{}, sum.NextActions...),
	}
	for _, p := range sum.Projects {
		out.Projects = append(out.Projects, apiv1.ProjectUsage{Project: apiv1.Named{ID: p.Project.ID, Name: p.Project.Name}, Usage: s.usage(&p.Usage)})
	}
	for _, p := range sum.Providers {
		caps := p.Capabilities
		out.Providers = append(out.Providers, apiv1.ProviderStatus{
			Name: p.Name, Available: p.Available, Default: p.Default, Detail: p.Detail,
			Capabilities: apiv1.Capabilities{MemoryPause: caps.MemoryPause, Hibernate: caps.Hibernate, Fork: caps.Fork, Snapshots: caps.Snapshots, GPU: caps.GPU},
		})
	}
	out.Endpoints = []apiv1.EndpointStatus{
		{Name: "api", URL: s.cfg.PublicURL + "/api/v1", Available: true, Detail: "serving"},
		{Name: "openapi", URL: s.cfg.PublicURL + "/api/v1/openapi.json", Available: true, Detail: "serving"},
		{Name: "sandbox create", URL: s.cfg.PublicURL + "/api/v1/sandboxes", Available: sum.CreatesAccepted,
			Detail: availability(sum.CreatesAccepted, "accepting creates", "the default provider is not available")},
	}
	for _, q := range sum.Quotas {
		out.Quotas = append(out.Quotas, apiv1.Quota{Name: q.Name, Limit: q.Limit, Used: q.Used, OK: q.OK, Detail: q.Detail})
	}
	if d := sum.Disk; d != nil {
		out.Disk = &apiv1.DiskStatus{TotalMB: d.TotalMB, FreeMB: d.FreeMB, ReservedBySandboxes: d.ReservedBySandboxes, ReserveMB: d.ReserveMB, AvailableMB: d.AvailableMB}
	}
	writeJSON(w, http.StatusOK, out)
}

func availability(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}
