package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/pricing"
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.Encode(v)
}

// renderAll renders each of list; none renders as [], never null.
func renderAll[T, R any](list []T, render func(T) R) []R {
	out := make([]R, 0, len(list))
	for _, v := range list {
		out = append(out, render(v))
	}
	return out
}

// sandbox renders a ledger row; the runtime URL and token appear only while it runs.
func (s *Server) sandbox(sb sbx.Sandbox, timeline []sbx.Event) apiv1.Sandbox {
	out := apiv1.Sandbox{
		SandboxID: sb.ProviderSandboxID, ID: sb.ID, Provider: sb.Provider, Kind: string(sb.Kind),
		TemplateID: sb.TemplateID, State: string(sb.State), PauseReason: string(sb.PauseReason),
		EndReason: string(sb.EndReason), Diagnostic: sb.Diagnostic,
		OrgID: sb.OrgID, WorkspaceID: sb.WorkspaceID, ProjectID: sb.ProjectID,
		CreatedAt: sb.CreatedAt, StartedAt: timePtr(sb.StartedAt), PausedAt: timePtr(sb.PausedAt),
		EndedAt: timePtr(sb.EndedAt), ExpiresAt: timePtr(sb.ExpiresAt), LastSettledAt: timePtr(sb.LastSettledAt),
		Hibernated: sb.Hibernated, Timeout: int64(sb.Timeout / time.Second), AutoPause: sb.AutoPause,
		CPU: float64(sb.Resources.MilliCPU) / 1000, MemoryMB: sb.Resources.MemoryMB, DiskMB: sb.Resources.DiskMB,
		EnvVarNames: sb.EnvVarNames, Metadata: sb.Metadata, SnapshotID: sb.SnapshotID, ForkedFrom: sb.ForkedFrom,
	}
	running := s.mgr.Running(sb)
	out.BilledCredits, out.RunningCredits, out.EstimatedTotalCredits = credits(sb.BilledMicros), credits(running), credits(sb.BilledMicros+running)
	if out.EnvVarNames == nil {
		out.EnvVarNames = []string{}
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	if g := sb.Resources.GPU; g != nil {
		out.GPU = &apiv1.GPU{Type: g.Type, Count: g.Count, Fraction: g.Fraction}
	}
	out.Egress = renderEgress(sb.Egress)
	for _, v := range sb.Volumes {
		out.Volumes = append(out.Volumes, apiv1.VolumeMount{Name: v.Name, Path: v.Path, ReadOnly: v.ReadOnly})
	}
	if sb.State == sbx.StateRunning {
		out.RuntimeURL = s.runtimeURL(sb)
		out.AccessToken = sb.AccessToken
	}
	out.Preview = renderPreview(sb.Preview)
	out.Ports = []apiv1.PortURL{}
	for _, port := range sb.Ports {
		u := apiv1.PortURL{Port: port}
		if !sb.State.Final() {
			u.URL = s.previewURL(sb, port)
		}
		out.Ports = append(out.Ports, u)
	}
	if !sb.State.Final() {
		out.PreviewURL = s.previewURL(sb, 0)
		out.TrafficToken = sb.TrafficToken()
	}
	for _, e := range timeline {
		out.Timeline = append(out.Timeline, apiv1.Event{At: e.At, Step: e.Step, Detail: e.Detail})
	}
	return out
}

// renderPreview spells a preview policy out, defaults included.
func renderPreview(p sbx.Preview) apiv1.Preview {
	out := apiv1.Preview{Access: "private", Host: "preview", Wake: new(bool)}
	if p.Public {
		out.Access = "public"
	}
	if p.LocalHost {
		out.Host = "localhost"
	}
	*out.Wake = !p.NoWake
	return out
}

// renderEgress is an egress policy as the API shows it.
func renderEgress(e *sbx.Egress) *apiv1.Egress {
	if e == nil {
		return nil
	}
	return &apiv1.Egress{Mode: string(e.Mode), Allow: e.Allow, Deny: e.Deny}
}

// egressOf is a policy as a body gives it, unchecked (sbx.CheckEgress).
func egressOf(e *apiv1.Egress) *sbx.Egress {
	if e == nil {
		return nil
	}
	return &sbx.Egress{Mode: sbx.EgressMode(e.Mode), Allow: e.Allow, Deny: e.Deny}
}

// runtimeURL is where a client reaches the sandbox's agent through this server:
// the agent port's preview host, {port}-{id}.{domain}.
func (s *Server) runtimeURL(sb sbx.Sandbox) string {
	u, err := url.Parse(s.cfg.PublicURL)
	if err != nil || u.Host == "" {
		return ""
	}
	host := fmt.Sprintf("%d-%s.%s", apiv1.AgentPort, sb.ProviderSandboxID, s.cfg.Domain)
	if port := u.Port(); port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host
}

func (s *Server) usage(u *sbx.Usage) apiv1.Usage {
	out := apiv1.Usage{ByState: map[string]int{}, ByKind: map[string]int{}, ByProvider: map[string]int{}, BilledCredits: credits(0)}
	if u == nil {
		return out
	}
	out.Sandboxes, out.RunningMemoryMB, out.LifetimeSeconds = u.Sandboxes, u.RunningMemoryMB, u.LifetimeSeconds
	out.RunningCPU, out.BilledCredits = float64(u.RunningMilliCPU)/1000, credits(u.BilledMicros)
	for k, n := range u.ByState {
		out.ByState[string(k)] = n
	}
	for k, n := range u.ByKind {
		out.ByKind[string(k)] = n
	}
	for k, n := range u.ByProvider {
		out.ByProvider[k] = n
	}
	return out
}

// credits renders micro-credits as a decimal string.
func credits(micros int64) string { return pricing.FormatMicros(micros) }

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
