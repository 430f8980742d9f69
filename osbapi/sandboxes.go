package osbapi

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/strictjson"
)

// sandbox is OpenSandbox's Sandbox (and, without image, CreateSandboxResponse).
type sandbox struct {
	ID         string            `json:"id"`
	Image      *imageOut         `json:"image,omitempty"`
	Status     status            `json:"status"`
	Metadata   map[string]string `json:"metadata"`
	Entrypoint []string          `json:"entrypoint"`
	ExpiresAt  *time.Time        `json:"expiresAt,omitempty"`
	CreatedAt  time.Time         `json:"createdAt"`
}

type imageOut struct {
	URI string `json:"uri"`
}

func (s *Server) sandbox(sb sbx.Sandbox) sandbox {
	out := sandbox{ID: sb.ProviderSandboxID, Image: &imageOut{URI: sb.TemplateID}, Status: statusOf(sb),
		Metadata: sb.Metadata, Entrypoint: idleEntrypoint, CreatedAt: sb.CreatedAt.UTC()}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	if !sb.ExpiresAt.IsZero() {
		at := sb.ExpiresAt.UTC()
		out.ExpiresAt = &at
	}
	return out
}

func (s *Server) get(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	sb, err := s.mgr.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.sandbox(sb))
	return nil
}

// live reads the sandbox the path names; one that ended is not found for
// what only a live sandbox takes.
func (s *Server) live(r *http.Request, c sbx.Caller) (sbx.Sandbox, error) {
	id := r.PathValue("id")
	sb, err := s.mgr.Get(r.Context(), c, id)
	if err == nil && sb.State.Final() {
		err = sbx.Errorf(sbx.ENotFound, "sandbox %s not found: it is %s", id, sb.State)
	}
	return sb, err
}

// pagination is OpenSandbox's PaginationInfo.
type pagination struct {
	Page        int  `json:"page"`
	PageSize    int  `json:"pageSize"`
	TotalItems  int  `json:"totalItems"`
	TotalPages  int  `json:"totalPages"`
	HasNextPage bool `json:"hasNextPage"`
}

// Bounds of a list: a page's size, and the sandboxes a list reads to
// number its pages.
const (
	defaultPageSize = 20
	maxPageSize     = 1000
	maxListed       = 10000
)

// list answers a page of the caller's sandboxes in the states asked (by
// default the live ones) whose metadata has every pair of the filter.
func (s *Server) list(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	q := r.URL.Query()
	var p sbx.Problems
	page, size := intParam(&p, q, "page", 1, 1, 1<<30), intParam(&p, q, "pageSize", defaultPageSize, 1, maxPageSize)
	want := map[string]bool{}
	states := q["state"]
	if len(states) == 0 {
		states = liveStates
	}
	var f sbx.SandboxFilter
	for _, v := range states {
		name := stateName(v)
		if name == "" {
			p.Add("state", "state %q must be one of Pending, Running, Pausing, Paused, Resuming, Stopping, Terminated and Failed", v)
			continue
		}
		want[name] = true
		for _, st := range sbxStates[name] {
			if !containsState(f.States, st) {
				f.States = append(f.States, st)
			}
		}
	}
	if v := q.Get("metadata"); v != "" {
		md, err := url.ParseQuery(v)
		if err != nil {
			p.Add("metadata", "metadata filter %q must be url-encoded key=value pairs joined by &: %v", v, err)
		}
		f.Metadata = map[string]string{}
		for k, vs := range md {
			f.Metadata[k] = vs[len(vs)-1]
		}
	}
	if err := p.Err(); err != nil {
		return err
	}
	var items []sandbox
	for f.Limit = maxPageSize; ; {
		got, next, err := s.mgr.List(r.Context(), c, f)
		if err != nil {
			return err
		}
		for _, sb := range got {
			if out := s.sandbox(sb); want[out.Status.State] {
				items = append(items, out)
			}
		}
		if f.Cursor = next; next == "" || len(items) >= maxListed {
			break
		}
	}
	total := len(items)
	from, to := min(total, (page-1)*size), min(total, page*size)
	out := struct {
		Items      []sandbox  `json:"items"`
		Pagination pagination `json:"pagination"`
	}{Items: append([]sandbox{}, items[from:to]...),
		Pagination: pagination{Page: page, PageSize: size, TotalItems: total, TotalPages: (total + size - 1) / size, HasNextPage: to < total}}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func containsState(states []sbx.State, st sbx.State) bool {
	for _, s := range states {
		if s == st {
			return true
		}
	}
	return false
}

// intParam reads an integer query parameter from lo to hi, def when absent.
func intParam(p *sbx.Problems, q url.Values, name string, def, lo, hi int) int {
	v := q.Get(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		p.Add(name, "%s %q must be an integer from %d to %d", name, v, lo, hi)
		return def
	}
	return n
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

func (s *Server) pause(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
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
	w.WriteHeader(http.StatusAccepted)
	return nil
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	sb, err := s.live(r, c)
	if err != nil {
		return err
	}
	if sb.State != sbx.StatePaused {
		return sbx.Errorf(sbx.EConflict, "sandbox %s is not paused: it is %s", sb.ProviderSandboxID, sb.State)
	}
	if _, err := s.mgr.Resume(r.Context(), c, r.PathValue("id"), 0); err != nil {
		return err
	}
	w.WriteHeader(http.StatusAccepted)
	return nil
}

// renew sets when a sandbox expires: sbx's timeout, from now to expiresAt.
func (s *Server) renew(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body struct {
		ExpiresAt string `json:"expiresAt"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339Nano, body.ExpiresAt)
	switch {
	case body.ExpiresAt == "":
		return sbx.Invalid("expiresAt", "expiresAt (an RFC 3339 time) is required")
	case err != nil:
		return sbx.Invalid("expiresAt", "expiresAt %q must be an RFC 3339 time such as 2025-11-16T14:30:45Z", strictjson.Short(body.ExpiresAt))
	case !at.After(time.Now()):
		return sbx.Invalid("expiresAt", "expiresAt %s must be in the future", body.ExpiresAt)
	}
	if _, err := s.live(r, c); err != nil {
		return err
	}
	d := time.Until(at).Round(time.Second)
	sb, err := s.mgr.SetTimeout(r.Context(), c, r.PathValue("id"), max(d, time.Second))
	if err != nil {
		return err
	}
	out := struct {
		ExpiresAt time.Time `json:"expiresAt"`
	}{at.UTC()}
	if !sb.ExpiresAt.IsZero() {
		out.ExpiresAt = sb.ExpiresAt.UTC()
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// endpointOut is OpenSandbox's Endpoint: host and path without a scheme,
// and the headers a request to it carries.
type endpointOut struct {
	Endpoint string            `json:"endpoint"`
	Headers  map[string]string `json:"headers,omitempty"`
}

// endpoint answers where serve reaches a port of a sandbox: execd's port
// at serve's route to the agent's execd (ExecdPrefix) with the access
// token, any other at its preview path with the traffic token when the
// preview is private.
func (s *Server) endpoint(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || !sbx.ValidPort(port) {
		return sbx.Invalid("port", "port %q must be a number from 1 to 65535", strictjson.Short(r.PathValue("port")))
	}
	if sbx.PreviewPortReserved(port) {
		return sbx.Invalid("port", "port %d is the sbx agent's or SSH's, never reached at an endpoint (execd is %d)", port, ExecdPort)
	}
	if r.URL.Query().Has("expires") {
		return sbx.Invalid("expires", "expires (a signed endpoint) is not supported: an sbx endpoint's headers carry its token")
	}
	if v := r.URL.Query().Get("use_server_proxy"); v != "" && v != "true" && v != "false" {
		return sbx.Invalid("use_server_proxy", "use_server_proxy %q must be true or false", strictjson.Short(v))
	}
	sb, err := s.live(r, c)
	if err != nil {
		return err
	}
	if port == ExecdPort {
		writeJSON(w, http.StatusOK, endpointOut{Endpoint: s.cfg.Host + ExecdPrefix + sb.ProviderSandboxID,
			Headers: map[string]string{ExecdTokenHeader: sb.AccessToken}})
		return nil
	}
	out := endpointOut{Endpoint: s.cfg.Host + "/api/v1/sandboxes/" + sb.ProviderSandboxID + "/ports/" + strconv.Itoa(port)}
	if !sb.Preview.Public {
		out.Headers = map[string]string{apiv1.TrafficTokenHeader: sb.TrafficToken()}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
