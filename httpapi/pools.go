package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
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
	var p sbx.Problems
	l := s.mgr.Config().Limits
	res := sbx.Resources{}
	if body.CPU != nil {
		res.MilliCPU = l.MilliCPU(&p, "cpu", *body.CPU)
	}
	if body.MemoryMB != nil {
		res.MemoryMB = l.Memory(&p, "memoryMB", *body.MemoryMB)
	}
	if body.DiskMB != nil {
		res.DiskMB = l.Disk(&p, "diskMB", *body.DiskMB)
	}
	if err := p.Err(); err != nil {
		s.error(w, r, err)
		return
	}
	st, err := s.mgr.SetPool(r.Context(), caller(r), r.PathValue("template"), body.MinReady, body.MaxReady, s.mgr.StartResources(res))
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
