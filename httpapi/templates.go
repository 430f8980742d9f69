package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
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
	out := apiv1.Template{Name: t.Name, Versions: []apiv1.TemplateVersion{}}
	for _, v := range t.Versions {
		if v.Current {
			out.Version = v.Version
		}
		out.Versions = append(out.Versions, apiv1.TemplateVersion{Version: v.Version, Current: v.Current, Source: v.Source, Packages: v.Packages,
			StartCmd: v.StartCmd, User: v.User, Ports: v.Ports, SizeBytes: v.SizeBytes, CreatedAt: v.Created})
	}
	return out
}
