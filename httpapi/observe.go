package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

func (s *Server) sandboxLogs(w http.ResponseWriter, r *http.Request) {
	s.logs(w, r, r.PathValue("id"))
}

// logs answers a page of a sandbox's log (its query, limit and cursor,
// checked by checkInput).
func (s *Server) logs(w http.ResponseWriter, r *http.Request, ref string) {
	q := r.URL.Query()
	limit, err := parseLimit(q)
	if err != nil {
		s.error(w, r, err)
		return
	}
	sb, err := s.mgr.Get(r.Context(), caller(r), ref)
	if err != nil {
		s.error(w, r, err)
		return
	}
	lines, next, err := s.mgr.Logs(r.Context(), sb, q.Get("cursor"), limit)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := apiv1.LogPage{Items: make([]apiv1.LogLine, 0, len(lines)), NextCursor: next}
	for _, l := range lines {
		out.Items = append(out.Items, apiv1.LogLine{At: l.At, Source: l.Source, Line: l.Line})
	}
	writeJSON(w, http.StatusOK, out)
}

// sandboxLogStream follows a sandbox's log: every line so far, then each
// line as it comes, as NDJSON LogLines, until the sandbox ends (killed or
// failed) or the client goes. Its query (none) is checked by checkInput.
func (s *Server) sandboxLogStream(w http.ResponseWriter, r *http.Request) {
	sb, err := s.mgr.Get(r.Context(), caller(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", apiv1.NDJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // a proxy in front passes lines on as they come
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	enc := json.NewEncoder(w)
	err = s.mgr.FollowLogs(r.Context(), sb, func(lines []sbx.LogLine) error {
		for _, l := range lines {
			if err := enc.Encode(apiv1.LogLine{At: l.At, Source: l.Source, Line: l.Line}); err != nil {
				return err
			}
		}
		return rc.Flush()
	})
	if err != nil && r.Context().Err() == nil {
		// The status is sent: the stream just ends, and the log says why.
		s.log.Warn("following a sandbox's log", "sandbox", sb.ID, "err", err)
	}
}

// sandboxMetrics answers a running sandbox's metrics. Its query (none) is
// checked by checkInput.
func (s *Server) sandboxMetrics(w http.ResponseWriter, r *http.Request) {
	sb, err := s.mgr.Get(r.Context(), caller(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	m, err := s.mgr.Metrics(r.Context(), sb)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.Metrics{
		At: m.At, CPUSeconds: m.CPUSeconds, MemoryBytes: m.MemoryBytes, Processes: m.Processes,
		NetRxBytes: m.NetRxBytes, NetTxBytes: m.NetTxBytes, DiskUsedBytes: m.DiskUsedBytes,
	})
}
