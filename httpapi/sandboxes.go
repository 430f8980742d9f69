package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request) {
	data, err := readJSON(w, r)
	if err != nil {
		s.error(w, r, err)
		return
	}
	req, project, err := s.parseCreate(data)
	if err == nil {
		req.Once, err = once(r, req)
	}
	c := caller(r)
	if err == nil && project != "" {
		c, err = s.tenancy.InProject(r.Context(), c, project)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	sb, replayed, err := s.mgr.CreateOnce(r.Context(), c, req)
	if err != nil {
		s.error(w, r, err)
		return
	}
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
	}
	s.renderSandbox(w, r, status, sb)
}

func (s *Server) getSandbox(w http.ResponseWriter, r *http.Request) {
	sb, err := s.mgr.Get(r.Context(), caller(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.renderSandbox(w, r, http.StatusOK, sb)
}

func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request) {
	s.kill(w, r, r.PathValue("id"))
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request, ref string) {
	sb, err := s.mgr.Kill(r.Context(), caller(r), ref)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.renderSandbox(w, r, http.StatusOK, sb)
}

func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request) {
	s.list(w, r)
}

// list answers a page of the caller's sandboxes filtered by the query (the
// route's contract says which parameters it takes: checkInput).
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		s.error(w, r, err)
		return
	}
	items, next, err := s.mgr.List(r.Context(), caller(r), f)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.SandboxList{Items: make([]apiv1.Sandbox, 0, len(items)), NextCursor: next}
	for _, sb := range items {
		out.Items = append(out.Items, s.sandbox(sb, nil))
	}
	writeJSON(w, http.StatusOK, out)
}

// renderSandbox answers a sandbox with its timeline and volumes.
func (s *Server) renderSandbox(w http.ResponseWriter, r *http.Request, status int, sb sbx.Sandbox) {
	timeline, err := s.mgr.Timeline(r.Context(), sb)
	if err == nil {
		sb, err = s.mgr.Detail(r.Context(), sb)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, status, s.sandbox(sb, timeline))
}

// parseFilter reads list filters from a query.
func parseFilter(q url.Values) (sbx.SandboxFilter, error) {
	var p problems
	f := sbx.SandboxFilter{TemplateID: q.Get("template"), ProjectID: q.Get("project_id"), Cursor: q.Get("cursor")}
	if f.ProjectID != "" && uuid.Validate(f.ProjectID) != nil {
		p.Add("project_id", "project_id %q must be a project's ID (a UUID)", f.ProjectID)
	}
	for _, v := range q["state"] {
		for _, st := range strings.Split(v, ",") {
			if !sbx.State(st).Valid() {
				p.Add("state", "state %q must be one of starting, running, paused, killed, failed", st)
			}
			f.States = append(f.States, sbx.State(st))
		}
	}
	for _, kv := range q["metadata"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			p.Add("metadata", "metadata filter %q must be key=value", kv)
			continue
		}
		if f.Metadata == nil {
			f.Metadata = map[string]string{}
		}
		f.Metadata[k] = v
	}
	limit, err := parseLimit(q)
	if err != nil {
		p.Add("limit", "%s", err.Error())
	}
	f.Limit = limit
	return f, p.Err()
}

// parseLimit reads the limit parameter: 1 to 1000, 100 when absent.
func parseLimit(q url.Values) (int, error) {
	v := q.Get("limit")
	if v == "" {
		return 100, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1000 {
		return 0, sbx.Invalid("limit", "limit %q must be an integer from 1 to 1000", v)
	}
	return n, nil
}
