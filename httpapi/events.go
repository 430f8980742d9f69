package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/events"
)

// The org's event log, through the events service: a page of the events
// after an ID (GET /api/v1/events), or all of them then each new one as
// server-sent events (GET /api/v1/events/stream), each scoped to what the
// caller's key reaches.

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q, ok := s.eventQuery(w, r, "")
	if !ok {
		return
	}
	page, err := s.events.List(r.Context(), caller(r), q)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.EventList{Items: renderAll(page.Items, events.Render), Next: page.Next})
}

// followEvents streams the events as text/event-stream: each as
// "id: ID", "event: TYPE", "data: JSON"; from after the Last-Event-ID
// header's ID (a reconnecting EventSource's) or else the after parameter.
func (s *Server) followEvents(w http.ResponseWriter, r *http.Request) {
	q, ok := s.eventQuery(w, r, r.Header.Get("Last-Event-ID"))
	if !ok {
		return
	}
	if err := q.Check(); err != nil {
		s.error(w, r, err) // a bad query is a 400 before the stream starts
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // a proxy in front passes events on as they come
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, ": sbx events\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	quietSince := time.Now()
	err := s.events.Follow(r.Context(), caller(r), q, func(list []sbx.OrgEvent) error {
		if len(list) == 0 {
			if time.Since(quietSince) < keepalive {
				return nil
			}
			if _, err := fmt.Fprint(w, ": keepalive\n\n"); err != nil {
				return err
			}
		}
		quietSince = time.Now()
		for _, e := range list {
			data, err := json.Marshal(events.Render(e))
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, data); err != nil {
				return err
			}
		}
		return rc.Flush()
	})
	if err != nil && r.Context().Err() == nil {
		s.log.Warn("following the org's events", "err", err)
	}
}

// keepalive is how long an event stream stays quiet before it sends a
// comment line, so that proxies in front keep the connection.
const keepalive = 15 * time.Second

// eventQuery parses the events' query parameters; lastID, when not empty,
// is where to resume instead of after.
func (s *Server) eventQuery(w http.ResponseWriter, r *http.Request, lastID string) (events.Query, bool) {
	q, err := parseEventQuery(r.URL.Query(), lastID)
	if err != nil {
		s.error(w, r, err)
		return q, false
	}
	return q, true
}

func parseEventQuery(v url.Values, lastID string) (events.Query, error) {
	var q events.Query
	var p sbx.Problems
	after, field := v.Get("after"), "after"
	if lastID != "" {
		after, field = lastID, "Last-Event-ID"
	}
	if after != "" {
		n, err := strconv.ParseInt(after, 10, 64)
		if err != nil || n < 0 {
			p.Add(field, "%s %q is not an event ID (a whole number, 0 or more)", field, after)
		}
		q.After = n
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > sbx.MaxEventPage {
			p.Add("limit", "limit %q is not a number from 1 to %d", l, sbx.MaxEventPage)
		}
		q.Limit = n
	}
	for _, t := range v["type"] {
		for part := range strings.SplitSeq(t, ",") {
			q.Types = append(q.Types, strings.TrimSpace(part))
		}
	}
	q.Sandbox, q.Project = v.Get("sandbox"), v.Get("project")
	return q, p.Err()
}
