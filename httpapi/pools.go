package httpapi

import (
	"net/http"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/lifecycle"
)

func (s *Server) listWarmPools(w http.ResponseWriter, r *http.Request) {
	pools, err := s.mgr.Pools(r.Context(), caller(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.WarmPoolList{Items: renderAll(pools, renderPool)})
}

func (s *Server) setWarmPool(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	var body apiv1.SetWarmPoolRequest
	if !s.decode(w, r, &body) {
		return
	}
	res, err := s.mgr.Size(body.CPU, body.MemoryMB, body.DiskMB)
	if err != nil {
		s.error(w, r, err)
		return
	}
	st, err := s.mgr.SetPool(r.Context(), caller(r), r.PathValue("template"), body.MinReady, body.MaxReady, res)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderPool(st))
}

func (s *Server) deleteWarmPool(w http.ResponseWriter, r *http.Request) {
	if err := s.mgr.DeletePool(r.Context(), caller(r), r.PathValue("template")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func renderPool(p lifecycle.PoolStatus) apiv1.WarmPool {
	return apiv1.WarmPool{Template: p.TemplateID, MinReady: p.MinReady, MaxReady: p.MaxReady, CPU: float64(p.Resources.MilliCPU) / 1000,
		MemoryMB: p.Resources.MemoryMB, DiskMB: p.Resources.DiskMB, Ready: p.Ready, Starting: p.Starting, ProjectID: p.ProjectID, UpdatedAt: p.UpdatedAt}
}

// prepareTemplate starts giving a template a ready snapshot; GET follows it.
func (s *Server) prepareTemplate(w http.ResponseWriter, r *http.Request) {
	if !s.operator(w, r) {
		return
	}
	var body apiv1.PrepareTemplateRequest
	if !s.decode(w, r, &body) {
		return
	}
	res, err := s.mgr.Size(body.CPU, body.MemoryMB, body.DiskMB)
	var timeout time.Duration
	if err == nil {
		timeout, err = seconds("timeout", body.Timeout, false, 1800)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	st, err := s.mgr.PrepareTemplate(r.Context(), caller(r), r.PathValue("template"),
		lifecycle.ReadyRequest{Command: body.Command, Port: body.Port, Resources: res, Timeout: timeout, WarmCode: body.WarmCode})
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, renderReady(r.PathValue("template"), st))
}

func (s *Server) readyTemplate(w http.ResponseWriter, r *http.Request) {
	st, err := s.mgr.ReadyOf(r.Context(), caller(r), r.PathValue("template"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderReady(r.PathValue("template"), st))
}

func renderReady(template string, st lifecycle.ReadyState) apiv1.ReadyTemplate {
	out := apiv1.ReadyTemplate{Template: template, State: st.State, Diagnostic: st.Diagnostic}
	if st.Snapshot != nil {
		sn := renderSnapshot(*st.Snapshot)
		out.Snapshot = &sn
	}
	return out
}

func (s *Server) dropReadyTemplate(w http.ResponseWriter, r *http.Request) {
	if err := s.mgr.DropReady(r.Context(), caller(r), r.PathValue("template")); err != nil {
		s.error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
