package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/lifecycle"
)

// createSnapshot captures a sandbox; it answers once the snapshot is ready.
func (s *Server) createSnapshot(w http.ResponseWriter, r *http.Request) {
	var body apiv1.CreateSnapshotRequest
	if !s.decode(w, r, &body) {
		return
	}
	req := lifecycle.SnapshotRequest{Name: body.Name, Metadata: body.Metadata, Memory: body.Memory == nil || *body.Memory}
	sn, err := s.mgr.Snapshot(r.Context(), caller(r), r.PathValue("id"), req)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderSnapshot(sn))
}

func (s *Server) listSnapshots(w http.ResponseWriter, r *http.Request) {
	page, ok := s.page(w, r)
	if !ok {
		return
	}
	items, next, err := s.mgr.ListSnapshots(r.Context(), caller(r), sbx.SnapshotFilter{SourceSandboxID: r.URL.Query().Get("sandboxID"), Page: page})
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.SnapshotList{Items: renderAll(items, renderSnapshot), NextCursor: next})
}

func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) {
	sn, err := s.mgr.GetSnapshot(r.Context(), caller(r), r.PathValue("snapshot_id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderSnapshot(sn))
}

func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request) {
	sn, err := s.mgr.DeleteSnapshot(r.Context(), caller(r), r.PathValue("snapshot_id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderSnapshot(sn))
}

// forkSandbox makes children of a running sandbox; it answers once each
// runs or failed and was removed.
func (s *Server) forkSandbox(w http.ResponseWriter, r *http.Request) {
	var body apiv1.ForkRequest
	if !s.decode(w, r, &body) {
		return
	}
	count := body.Count
	if count == 0 {
		count = 1
	}
	res, err := s.mgr.Fork(r.Context(), caller(r), r.PathValue("id"), count)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.ForkResult{Children: []apiv1.Sandbox{}, Errors: res.Errors}
	if out.Errors == nil {
		out.Errors = []string{}
	}
	for _, ch := range res.Children {
		out.Children = append(out.Children, s.sandbox(ch, nil))
	}
	writeJSON(w, http.StatusCreated, out)
}

func renderSnapshot(sn sbx.Snapshot) apiv1.Snapshot {
	out := apiv1.Snapshot{ID: sn.ID, Name: sn.Name, SourceSandboxID: sn.SourceSandboxID, Provider: sn.Provider,
		TemplateID: sn.TemplateID, TemplateVersion: sn.TemplateVersion, State: string(sn.State), Memory: sn.Memory,
		SizeBytes: sn.SizeBytes, PausedMs: sn.Paused.Milliseconds(), CPU: float64(sn.Resources.MilliCPU) / 1000,
		MemoryMB: sn.Resources.MemoryMB, DiskMB: sn.Resources.DiskMB, Metadata: sn.Metadata, Diagnostic: sn.Diagnostic,
		OrgID: sn.OrgID, WorkspaceID: sn.WorkspaceID, ProjectID: sn.ProjectID, CreatedAt: sn.CreatedAt,
		ReadyAt: timePtr(sn.ReadyAt), DeletedAt: timePtr(sn.DeletedAt), BilledCredits: credits(sn.BilledMicros)}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	return out
}
