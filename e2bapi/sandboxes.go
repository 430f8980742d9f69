package e2bapi

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// newSandbox is the body of a create (NewSandboxV2, and v1's NewSandbox,
// which adds secure).
type newSandbox struct {
	TemplateID      string            `json:"templateID"`
	Timeout         *int64            `json:"timeout"`
	Metadata        map[string]string `json:"metadata"`
	EnvVars         map[string]string `json:"envVars"`
	AutoPause       *bool             `json:"autoPause"`
	AutoPauseMemory *bool             `json:"autoPauseMemory"`
	AutoResume      *struct {
		Enabled bool `json:"enabled"`
	} `json:"autoResume"`
	Secure              *bool           `json:"secure"`
	AllowInternetAccess *bool           `json:"allow_internet_access"`
	Network             *network        `json:"network"`
	VolumeMounts        []volumeMount   `json:"volumeMounts"`
	MCP                 json.RawMessage `json:"mcp"`
	IAM                 json.RawMessage `json:"iam"`
}

type volumeMount struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// defaultTemplate is the template of a create that names none.
const defaultTemplate = "base"

// templateAliases are E2B's names of templates that sbx has under its own.
var templateAliases = map[string]string{"code-interpreter-v1": "code-interpreter"}

func (s *Server) create(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body newSandbox
	if err := decode(r, &body); err != nil {
		return err
	}
	var p sbx.Problems
	refuse(&p, "mcp", body.MCP, "sbx runs no MCP gateway in sandboxes")
	refuse(&p, "iam", body.IAM, "sbx mints no workload identity tokens")
	if body.Secure != nil && !*body.Secure {
		p.Add("secure", "secure false is not supported: every sbx sandbox's envd needs its access token")
	}
	if body.AutoPauseMemory != nil && !*body.AutoPauseMemory {
		p.Add("autoPauseMemory", "autoPauseMemory false is not supported: an sbx pause keeps the sandbox's memory")
	}
	egress, public := egressOf(&p, body.AllowInternetAccess, body.Network)
	if err := p.Err(); err != nil {
		return err
	}
	ask := lifecycle.Ask{TemplateID: body.TemplateID, Timeout: body.Timeout, Env: body.EnvVars, Metadata: body.Metadata,
		Egress: egress, WaitReady: true, AutoPause: body.AutoPause != nil && *body.AutoPause}
	if ask.TemplateID == "" {
		ask.TemplateID = defaultTemplate
	}
	if t, ok := templateAliases[ask.TemplateID]; ok {
		ask.TemplateID = t
	}
	if snap, err := s.mgr.GetSnapshot(r.Context(), c, ask.TemplateID); err == nil { // E2B starts a snapshot as a template
		ask.TemplateID, ask.SnapshotID = "", snap.ID
	}
	if public != nil || body.AutoResume != nil {
		ask.Preview = &lifecycle.PreviewAsk{Access: "private"}
		if public != nil && *public {
			ask.Preview.Access = "public"
		}
		if body.AutoResume != nil {
			ask.Preview.Wake = &body.AutoResume.Enabled
		}
	}
	for _, v := range body.VolumeMounts {
		ask.Volumes = append(ask.Volumes, lifecycle.VolumeAsk{Name: v.Name, Path: v.Path})
	}
	req, err := s.mgr.Request(ask)
	if err != nil {
		return err
	}
	sb, err := s.mgr.Create(r.Context(), c, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, s.sandbox(sb))
	return nil
}

// refuse adds a problem when a field sbx cannot honour is set.
func refuse(p *sbx.Problems, field string, v json.RawMessage, why string) {
	if len(v) > 0 && string(v) != "null" && string(v) != "{}" {
		p.Add(field, "%s is not supported: %s", field, why)
	}
}

// sandbox is E2B's Sandbox: what a create or connect answers, with what
// the SDK needs to reach the sandbox's envd.
type sandbox struct {
	SandboxID          string  `json:"sandboxID"`
	TemplateID         string  `json:"templateID"`
	ClientID           string  `json:"clientID"`
	EnvdVersion        string  `json:"envdVersion"`
	EnvdAccessToken    string  `json:"envdAccessToken,omitempty"`
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// clientID stands for E2B's node ID, which sbx has no use for.
const clientID = "sbx"

func (s *Server) sandbox(sb sbx.Sandbox) sandbox {
	out := sandbox{SandboxID: sb.ProviderSandboxID, TemplateID: sb.TemplateID, ClientID: clientID, EnvdVersion: EnvdVersion,
		EnvdAccessToken: sb.AccessToken, Domain: &s.cfg.Domain}
	if !sb.Preview.Public {
		t := sb.TrafficToken()
		out.TrafficAccessToken = &t
	}
	return out
}

// listed is E2B's ListedSandbox.
type listed struct {
	SandboxID    string            `json:"sandboxID"`
	TemplateID   string            `json:"templateID"`
	Alias        string            `json:"alias,omitempty"`
	ClientID     string            `json:"clientID"`
	StartedAt    time.Time         `json:"startedAt"`
	EndAt        time.Time         `json:"endAt"`
	CPUCount     int               `json:"cpuCount"`
	MemoryMB     int64             `json:"memoryMB"`
	DiskSizeMB   int64             `json:"diskSizeMB"`
	Metadata     map[string]string `json:"metadata"`
	State        string            `json:"state"`
	EnvdVersion  string            `json:"envdVersion"`
	VolumeMounts []volumeMount     `json:"volumeMounts"`
}

func (s *Server) listed(sb sbx.Sandbox) listed {
	out := listed{SandboxID: sb.ProviderSandboxID, TemplateID: sb.TemplateID, ClientID: clientID, StartedAt: sb.CreatedAt,
		CPUCount: max(1, int(math.Ceil(float64(sb.Resources.MilliCPU)/1000))), MemoryMB: sb.Resources.MemoryMB,
		DiskSizeMB: sb.Resources.DiskMB, Metadata: sb.Metadata, State: "running", EnvdVersion: EnvdVersion, VolumeMounts: []volumeMount{}}
	if !sb.StartedAt.IsZero() {
		out.StartedAt = sb.StartedAt
	}
	switch {
	case !sb.ExpiresAt.IsZero():
		out.EndAt = sb.ExpiresAt
	case !sb.EndedAt.IsZero():
		out.EndAt = sb.EndedAt
	default: // paused: it would end its timeout after it resumes
		out.EndAt = time.Now().Add(sb.Timeout).UTC()
	}
	if sb.State == sbx.StatePaused {
		out.State = "paused"
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	for _, v := range sb.Volumes {
		out.VolumeMounts = append(out.VolumeMounts, volumeMount{Name: v.Name, Path: v.Path})
	}
	return out
}

// detail is E2B's SandboxDetail.
type detail struct {
	listed
	EnvdAccessToken     string     `json:"envdAccessToken,omitempty"`
	Domain              string     `json:"domain"`
	AllowInternetAccess *bool      `json:"allowInternetAccess"`
	Network             networkOut `json:"network"`
	Lifecycle           struct {
		OnTimeout  string `json:"onTimeout"`
		AutoResume bool   `json:"autoResume"`
	} `json:"lifecycle"`
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	sb, err := s.live(r, c)
	if err != nil {
		return err
	}
	if sb, err = s.mgr.Detail(r.Context(), sb); err != nil {
		return err
	}
	out := detail{listed: s.listed(sb), Domain: s.cfg.Domain, Network: renderNetwork(sb)}
	if sb.State == sbx.StateRunning {
		out.EnvdAccessToken = sb.AccessToken
	}
	internet := sb.Egress == nil || sb.Egress.Mode == sbx.EgressInternet
	out.AllowInternetAccess = &internet
	out.Lifecycle.OnTimeout, out.Lifecycle.AutoResume = "kill", !sb.Preview.NoWake
	if sb.AutoPause {
		out.Lifecycle.OnTimeout = "pause"
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// live reads the sandbox the path names; one that ended is not found, as
// in E2B, where a killed sandbox is gone.
func (s *Server) live(r *http.Request, c sbx.Caller) (sbx.Sandbox, error) {
	id := r.PathValue("id")
	sb, err := s.mgr.Get(r.Context(), c, id)
	if err == nil && sb.State.Final() {
		err = sbx.Errorf(sbx.ENotFound, "sandbox %s not found: it is %s", id, sb.State)
	}
	return sb, err
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	q := r.URL.Query()
	var p sbx.Problems
	f := sbx.SandboxFilter{TemplateID: q.Get("template"), Cursor: q.Get("nextToken"), Limit: 100}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			p.Add("limit", "limit %q must be an integer from 1 to 1000", v)
		}
		f.Limit = n
	}
	states := "running,paused"
	if v := q["state"]; len(v) > 0 {
		states = strings.Join(v, ",")
	}
	for _, st := range strings.Split(states, ",") {
		switch st {
		case "running":
			f.States = append(f.States, sbx.StateStarting, sbx.StateRunning)
		case "paused":
			f.States = append(f.States, sbx.StatePaused)
		default:
			p.Add("state", "state %q must be running or paused", st)
		}
	}
	if v := q.Get("metadata"); v != "" {
		md, err := metadataFilter(v)
		if err != nil {
			p.Add("metadata", "metadata filter %q must be percent-encoded key=value pairs: %v", v, err)
		}
		f.Metadata = md
	}
	if err := p.Err(); err != nil {
		return err
	}
	items, next, err := s.mgr.List(r.Context(), c, f)
	if err != nil {
		return err
	}
	out := make([]listed, 0, len(items))
	for _, sb := range items {
		out = append(out, s.listed(sb))
	}
	if next != "" {
		w.Header().Set("X-Next-Token", next)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// metadataFilter reads the list's metadata filter: a query string of
// pairs whose keys and values the SDKs percent-encode once more
// (encodeURIComponent, Python's quote).
func metadataFilter(v string) (map[string]string, error) {
	pairs, err := url.ParseQuery(v)
	if err != nil {
		return nil, err
	}
	md := map[string]string{}
	for k, vs := range pairs {
		key, err1 := url.PathUnescape(k)
		val, err2 := url.PathUnescape(vs[len(vs)-1])
		if err1 != nil || err2 != nil {
			return nil, sbx.Errorf(sbx.EInvalid, "metadata filter %q is not percent-encoded key=value pairs", v)
		}
		md[key] = val
	}
	return md, nil
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	if _, err := s.live(r, c); err != nil {
		return err
	}
	if _, err := s.mgr.Kill(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// timeoutBody is the body of a set-timeout, a connect and a resume.
type timeoutBody struct {
	Timeout   *int64 `json:"timeout"`
	Memory    *bool  `json:"memory"`
	AutoPause *bool  `json:"autoPause"` // resume's (before connect)
}

func (b timeoutBody) duration() time.Duration {
	if b.Timeout == nil {
		return 0
	}
	return time.Duration(*b.Timeout) * time.Second
}

func (s *Server) setTimeout(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body timeoutBody
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Timeout == nil {
		return sbx.Invalid("timeout", "timeout (seconds) is required")
	}
	if _, err := s.live(r, c); err != nil {
		return err
	}
	if _, err := s.mgr.SetTimeout(r.Context(), c, r.PathValue("id"), body.duration()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// maxRefresh bounds a refresh, in seconds, as E2B's API does.
const maxRefresh = 3600

func (s *Server) refresh(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body struct {
		Duration int64 `json:"duration"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Duration < 0 || body.Duration > maxRefresh {
		return sbx.Invalid("duration", "duration %d must be from 0 to %d seconds, as on E2B", body.Duration, maxRefresh)
	}
	if _, err := s.live(r, c); err != nil {
		return err
	}
	if _, err := s.mgr.Refresh(r.Context(), c, r.PathValue("id"), time.Duration(body.Duration)*time.Second); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body timeoutBody
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Memory != nil && !*body.Memory {
		return sbx.Invalid("memory", "memory false (a pause that drops the sandbox's memory) is not supported: an sbx pause keeps it")
	}
	sb, err := s.live(r, c)
	if err != nil {
		return err
	}
	if sb.State == sbx.StatePaused {
		return sbx.Errorf(sbx.EConflict, "sandbox %s is already paused", sb.ProviderSandboxID)
	}
	if _, err := s.mgr.Pause(r.Context(), c, r.PathValue("id"), sbx.PauseUser); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// connect makes a sandbox running for the caller: 200 when it was, 201
// when it was paused and resumed.
func (s *Server) connect(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body timeoutBody
	if err := decode(r, &body); err != nil {
		return err
	}
	if body.Memory != nil && !*body.Memory {
		return sbx.Invalid("memory", "memory false (resuming with a reboot) is not supported: an sbx sandbox resumes with its memory")
	}
	before, err := s.live(r, c)
	if err != nil {
		return err
	}
	sb, err := s.mgr.Connect(r.Context(), c, r.PathValue("id"), body.duration())
	if err != nil {
		return err
	}
	status := http.StatusOK
	if before.State == sbx.StatePaused {
		status = http.StatusCreated
	}
	writeJSON(w, status, s.sandbox(sb))
	return nil
}

// metric is E2B's SandboxMetric.
type metric struct {
	Timestamp     time.Time `json:"timestamp"`
	TimestampUnix int64     `json:"timestampUnix"`
	CPUCount      int       `json:"cpuCount"`
	CPUUsedPct    float64   `json:"cpuUsedPct"`
	MemUsed       int64     `json:"memUsed"`
	MemTotal      int64     `json:"memTotal"`
	MemCache      int64     `json:"memCache"`
	DiskUsed      int64     `json:"diskUsed"`
	DiskTotal     int64     `json:"diskTotal"`
}

// metrics answers one point, now (sbx measures a sandbox when asked rather
// than keeping a series); its CPU use is the average since it started.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	sb, err := s.live(r, c)
	if err != nil {
		return err
	}
	out := []metric{}
	if sb.State == sbx.StateRunning {
		m, err := s.mgr.Metrics(r.Context(), sb)
		if err != nil {
			return err
		}
		cpus := float64(sb.Resources.MilliCPU) / 1000
		pt := metric{Timestamp: m.At.UTC(), TimestampUnix: m.At.Unix(), CPUCount: max(1, int(math.Ceil(cpus))), MemUsed: m.MemoryBytes,
			MemTotal: sb.Resources.MemoryMB << 20, DiskUsed: m.DiskUsedBytes, DiskTotal: sb.Resources.DiskMB << 20}
		if up := m.At.Sub(sb.StartedAt).Seconds(); up > 0 && cpus > 0 {
			pt.CPUUsedPct = math.Min(100, 100*m.CPUSeconds/(up*cpus))
		}
		out = append(out, pt)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// logLine is one of E2B's SandboxLog.
type logLine struct {
	Timestamp time.Time `json:"timestamp"`
	Line      string    `json:"line"`
}

// logs answers E2B's SandboxLogs: the sandbox's log (its timeline and its
// provider's lines), oldest first, from ?start (Unix milliseconds) on, at
// most ?limit lines (default and at most 1000). logEntries, E2B's
// structured form, is left empty: sbx's lines carry no level.
func (s *Server) logs(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	sb, err := s.live(r, c)
	if err != nil {
		return err
	}
	q, limit, start := r.URL.Query(), 1000, time.Time{}
	var p sbx.Problems
	if v := q.Get("limit"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 1000 {
			p.Add("limit", "limit %q must be an integer from 1 to 1000", v)
		} else {
			limit = n
		}
	}
	if v := q.Get("start"); v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err != nil || ms < 0 {
			p.Add("start", "start %q must be Unix milliseconds", v)
		} else {
			start = time.UnixMilli(ms)
		}
	}
	if err := p.Err(); err != nil {
		return err
	}
	out := struct {
		Logs       []logLine `json:"logs"`
		LogEntries []any     `json:"logEntries"`
	}{Logs: []logLine{}, LogEntries: []any{}}
	lines, _, err := s.mgr.Logs(r.Context(), sb, "", math.MaxInt) // the whole log, read once
	if err != nil {
		return err
	}
	for _, l := range lines {
		if !l.At.Before(start) && len(out.Logs) < limit {
			out.Logs = append(out.Logs, logLine{Timestamp: l.At.UTC(), Line: l.Line})
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
