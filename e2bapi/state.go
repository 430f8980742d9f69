package e2bapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// forkResult is one child of a fork: the sandbox, or why it failed.
type forkResult struct {
	Sandbox *sandbox  `json:"sandbox,omitempty"`
	Error   *apiError `json:"error,omitempty"`
}

// fork makes running children of a running sandbox, each with its memory,
// processes and files.
func (s *Server) fork(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body struct {
		Timeout *int64 `json:"timeout"`
		Count   *int   `json:"count"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if t := body.Timeout; t != nil && (*t < 1 || time.Duration(*t)*time.Second > s.mgr.Config().MaxTimeout) {
		return sbx.Invalid("timeout", "timeout %d must be from 1 to %d seconds (the server's maximum)", *t, int64(s.mgr.Config().MaxTimeout/time.Second))
	}
	if _, err := s.live(r, c); err != nil {
		return err
	}
	count := 1
	if body.Count != nil {
		count = *body.Count
	}
	res, err := s.mgr.Fork(r.Context(), c, r.PathValue("id"), count)
	if err != nil {
		return err
	}
	out := []forkResult{}
	for _, child := range res.Children {
		if body.Timeout != nil {
			if child, err = s.mgr.SetTimeout(r.Context(), c, child.ID, timeoutBody{Timeout: body.Timeout}.duration()); err != nil {
				out = append(out, forkResult{Error: &apiError{Code: sbx.ErrorCode(err).HTTPStatus(), Message: sbx.ErrorMessage(err)}})
				continue
			}
		}
		sb := s.sandbox(child)
		out = append(out, forkResult{Sandbox: &sb})
	}
	for _, e := range res.Errors {
		out = append(out, forkResult{Error: &apiError{Code: http.StatusBadGateway, Message: e}})
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// snapshotInfo is E2B's snapshot: its ID (which a create takes as its
// templateID) and names.
type snapshotInfo struct {
	SnapshotID string   `json:"snapshotID"`
	Names      []string `json:"names"`
}

func info(sn sbx.Snapshot) snapshotInfo {
	out := snapshotInfo{SnapshotID: sn.ID, Names: []string{}}
	if sn.Name != "" {
		out.Names = append(out.Names, sn.Name)
	}
	return out
}

// snapshot captures a sandbox with its memory; it goes on as it was.
func (s *Server) snapshot(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := decode(r, &body); err != nil {
		return err
	}
	if _, err := s.live(r, c); err != nil {
		return err
	}
	sn, err := s.mgr.Snapshot(r.Context(), c, r.PathValue("id"), lifecycle.SnapshotRequest{Name: body.Name, Memory: true})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, info(sn))
	return nil
}

// snapshots lists the caller's snapshots, of one sandbox when asked.
func (s *Server) snapshots(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	q := r.URL.Query()
	f := sbx.SnapshotFilter{Page: sbx.Page{Cursor: q.Get("nextToken")}}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return sbx.Invalid("limit", "limit %q must be an integer from 1 to 1000", v)
		}
		f.Limit = n
	}
	if id := q.Get("sandboxID"); id != "" {
		sb, err := s.mgr.Get(r.Context(), c, id)
		if err != nil {
			return err
		}
		f.SourceSandboxID = sb.ID
	}
	items, next, err := s.mgr.ListSnapshots(r.Context(), c, f)
	if err != nil {
		return err
	}
	name := q.Get("name")
	out := []snapshotInfo{}
	for _, sn := range items {
		if name == "" || sn.Name == name {
			out = append(out, info(sn))
		}
	}
	if next != "" {
		w.Header().Set("X-Next-Token", next)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteSnapshot deletes a snapshot: E2B deletes one as the template it is.
func (s *Server) deleteSnapshot(w http.ResponseWriter, r *http.Request, c sbx.Caller) error {
	if _, err := s.mgr.DeleteSnapshot(r.Context(), c, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
