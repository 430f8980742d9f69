package httpapi

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/lifecycle"
)

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) {
	all, err := s.mgr.Templates(r.Context(), caller(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.TemplateList{Items: renderAll(all, renderTemplate)})
}

func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request) {
	t, err := s.mgr.Template(r.Context(), caller(r), r.PathValue("template"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderTemplate(t))
}

func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request) {
	if err := s.mgr.DeleteTemplate(r.Context(), caller(r), r.PathValue("template")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func renderTemplate(t sbx.TemplateInfo) apiv1.Template {
	out := apiv1.Template{ID: t.ID, Name: t.Name, ProjectID: t.ProjectID, Versions: []apiv1.TemplateVersion{}, Tags: t.Tags}
	if out.Tags == nil {
		out.Tags = map[string]string{}
	}
	for _, v := range t.Versions {
		if v.Current {
			out.Version = v.Version
		}
		out.Versions = append(out.Versions, apiv1.TemplateVersion{Version: v.Version, Current: v.Current, Source: v.Source, Packages: v.Packages,
			StartCmd: v.StartCmd, User: v.User, Ports: v.Ports, SizeBytes: v.SizeBytes, CreatedAt: v.Created})
	}
	return out
}

// createTemplate starts a build of a template of the key's project from a
// recipe; the template and its build come back at once (202).
func (s *Server) createTemplate(w http.ResponseWriter, r *http.Request) {
	var body apiv1.CreateTemplateRequest
	if !s.decode(w, r, &body) {
		return
	}
	recipe, err := s.recipe(body)
	if err != nil {
		s.error(w, r, err)
		return
	}
	t, b, err := s.mgr.BuildTemplate(r.Context(), caller(r), body.Name, recipe)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, renderBuild(b, t.Name))
}

// recipe is what a create-template body asks, its sizes checked as a
// create's.
func (s *Server) recipe(body apiv1.CreateTemplateRequest) (lifecycle.Recipe, error) {
	res, err := s.mgr.Size(body.CPU, body.MemoryMB, body.DiskMB)
	if err != nil {
		return lifecycle.Recipe{}, err
	}
	timeout, err := seconds("timeout", nonZero(body.Timeout), false, int64(lifecycle.MaxBuildLimit/time.Second))
	if err != nil {
		return lifecycle.Recipe{}, err
	}
	r := lifecycle.Recipe{Base: body.Base, Image: imageOf(body.Image), Env: body.Env, Workdir: body.Workdir, User: body.User,
		Start: body.Start, Ports: body.Ports, Resources: res, Timeout: timeout}
	if rd := body.Ready; rd != nil {
		wait, err := seconds("ready.timeout", nonZero(rd.Timeout), false, 1800)
		if err != nil {
			return r, err
		}
		r.Ready = lifecycle.ReadyRequest{Command: rd.Command, Port: rd.Port, Timeout: wait, WarmCode: rd.WarmCode}
	}
	for i, st := range body.Steps {
		step := lifecycle.Step{Packages: st.Packages, Run: st.Run}
		if f := st.File; f != nil {
			mode := uint64(0o644)
			if f.Mode != "" {
				if mode, err = strconv.ParseUint(f.Mode, 8, 32); err != nil || mode > 0o777 {
					return r, sbx.Invalid(fmt.Sprintf("steps[%d].file.mode", i), "mode %q is not octal permissions such as 0644", f.Mode)
				}
			}
			step.File = &lifecycle.File{Path: f.Path, Content: f.Content, Mode: fs.FileMode(mode)}
		}
		r.Steps = append(r.Steps, step)
	}
	return r, nil
}

func nonZero(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func (s *Server) listBuilds(w http.ResponseWriter, r *http.Request) {
	t, builds, err := s.mgr.Builds(r.Context(), caller(r), r.PathValue("template"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.TemplateBuildList{Items: []apiv1.TemplateBuild{}}
	for _, b := range builds {
		out.Items = append(out.Items, renderBuild(b, t.Name))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getBuild(w http.ResponseWriter, r *http.Request) {
	t, b, err := s.mgr.Build(r.Context(), caller(r), r.PathValue("template"), r.PathValue("build"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderBuild(b, t.Name))
}

// buildLogs answers a build's log after a line (?after=SEQ): a page of
// JSON, or with ?follow=true an NDJSON stream of each line as it comes
// until the build ends. Its query is checked by checkInput.
func (s *Server) buildLogs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var after int64
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.error(w, r, sbx.Invalid("after", "after %q is not a line number", v))
			return
		}
		after = n
	}
	follow := q.Get("follow") == "true"
	if v := q.Get("follow"); v != "" && v != "true" && v != "false" {
		s.error(w, r, sbx.Invalid("follow", "follow is true or false, not %q", v))
		return
	}
	c := caller(r)
	_, b, err := s.mgr.Build(r.Context(), c, r.PathValue("template"), r.PathValue("build"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	line := func(l sbx.BuildLogLine) apiv1.BuildLogLine {
		return apiv1.BuildLogLine{Seq: l.Seq, Time: l.At, Text: l.Text}
	}
	if !follow {
		page := apiv1.BuildLogPage{Lines: []apiv1.BuildLogLine{}}
		err := s.mgr.BuildLog(r.Context(), c, b, after, false, func(l sbx.BuildLogLine) error {
			page.Lines = append(page.Lines, line(l))
			return nil
		})
		if err != nil {
			s.error(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, page)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", apiv1.NDJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if rc.Flush() != nil {
		return
	}
	enc := json.NewEncoder(w)
	err = s.mgr.BuildLog(r.Context(), c, b, after, true, func(l sbx.BuildLogLine) error {
		if err := enc.Encode(line(l)); err != nil {
			return err
		}
		return rc.Flush()
	})
	if err != nil && r.Context().Err() == nil {
		s.log.Warn("following a build's log", "build", b.ID, "err", err)
	}
}

func renderBuild(b sbx.TemplateBuild, name string) apiv1.TemplateBuild {
	return apiv1.TemplateBuild{ID: b.ID, TemplateID: b.TemplateID, Template: name, State: string(b.State), Step: b.Step, Steps: b.Steps,
		SandboxID: b.SandboxID, Version: b.Version, Error: b.Error, CreatedAt: b.CreatedAt, StartedAt: timePtr(b.StartedAt), FinishedAt: timePtr(b.FinishedAt)}
}

// templateCatalog answers the catalog by category, in its order.
func (s *Server) templateCatalog(w http.ResponseWriter, r *http.Request) {
	entries, err := s.mgr.Catalog(r.Context(), caller(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.TemplateCatalog{Categories: []apiv1.CatalogCategory{}}
	for _, e := range entries {
		if n := len(out.Categories); n == 0 || out.Categories[n-1].Name != e.Category {
			out.Categories = append(out.Categories, apiv1.CatalogCategory{Name: e.Category})
		}
		t := apiv1.CatalogTemplate{Name: e.Name, Description: e.Description, Packages: e.Packages, Built: e.Built != nil}
		if e.Built != nil && len(e.Built.Versions) > 0 {
			t.Version, t.SizeBytes = e.Built.Versions[0].Version, e.Built.Versions[0].SizeBytes
		}
		cat := &out.Categories[len(out.Categories)-1]
		cat.Templates = append(cat.Templates, t)
	}
	writeJSON(w, http.StatusOK, out)
}

// tagTemplate points a tag of a template at one of its versions.
func (s *Server) tagTemplate(w http.ResponseWriter, r *http.Request) {
	var body apiv1.TagTemplateRequest
	if !s.decode(w, r, &body) {
		return
	}
	t, err := s.mgr.TagTemplate(r.Context(), caller(r), r.PathValue("template"), r.PathValue("tag"), body.Version)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderTemplate(t))
}

func (s *Server) untagTemplate(w http.ResponseWriter, r *http.Request) {
	if err := s.mgr.UntagTemplate(r.Context(), caller(r), r.PathValue("template"), r.PathValue("tag")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
