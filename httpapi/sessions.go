package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// A workspace's agent sessions, each on one of its runtimes, with a
// transcript clients append to. Everyone in the workspace reads and writes
// them; a project-scoped key reaches only the sessions of its project's
// runtime, as it reaches only that runtime.

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if _, ok := s.roleIn(w, r, ws, sbx.RoleMember, "listing sessions"); !ok {
		return
	}
	runtimeID, c := q.Get("runtime_id"), caller(r)
	if runtimeID == "" && !c.OrgWide() {
		rt, err := s.store.Runtime(r.Context(), c.Key.ProjectID)
		if err != nil {
			s.error(w, r, err)
			return
		}
		runtimeID = rt.ID // in another workspace it matches none here
	} else if runtimeID != "" {
		if _, ok := s.sessionRuntime(w, r, ws, runtimeID); !ok {
			return
		}
	}
	q.Del("runtime_id")
	p, err := parsePage(q)
	if err != nil {
		s.error(w, r, err)
		return
	}
	list, next, err := s.store.Sessions(r.Context(), ws.OrgID, ws.ID, runtimeID, p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.SessionList{Items: renderAll(list, renderSession), NextCursor: next})
}

// createSession starts a session on a runtime of the workspace.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	var body apiv1.CreateSessionRequest
	if !s.decode(w, r, &body) {
		return
	}
	if _, ok := s.roleIn(w, r, ws, sbx.RoleMember, "creating a session"); !ok {
		return
	}
	if body.RuntimeID == "" {
		s.error(w, r, sbx.Invalid("runtime_id", "runtime_id is required: the runtime the session is on"))
		return
	}
	rt, ok := s.sessionRuntime(w, r, ws, body.RuntimeID)
	if !ok {
		return
	}
	c := caller(r)
	by := c.User.ID
	if by == "" {
		by = c.Key.ID
	}
	se, err := s.store.CreateSession(r.Context(), ws.OrgID, ws.ID, rt.ID, body.Title, by, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderSession(se))
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	if se, ok := s.session(w, r, "reading a session"); ok {
		writeJSON(w, http.StatusOK, renderSession(se))
	}
}

// listSessionMessages answers a page of a session's transcript by seq.
func (s *Server) listSessionMessages(w http.ResponseWriter, r *http.Request) {
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	se, ok := s.session(w, r, "reading a session")
	if !ok {
		return
	}
	msgs, next, err := s.store.SessionMessages(r.Context(), se.OrgID, se.WorkspaceID, se.ID, p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderMessages(msgs, next))
}

// appendSessionMessages appends messages to a session's transcript, all or
// none, and answers them numbered.
func (s *Server) appendSessionMessages(w http.ResponseWriter, r *http.Request) {
	var body apiv1.AppendMessagesRequest
	if !s.decode(w, r, &body) {
		return
	}
	se, ok := s.session(w, r, "appending to a session")
	if !ok {
		return
	}
	msgs := make([]sbx.SessionMessage, len(body.Messages))
	for i, m := range body.Messages {
		msgs[i] = sbx.SessionMessage{Role: m.Role, Content: m.Content}
	}
	msgs, err := s.store.AppendSessionMessages(r.Context(), se.OrgID, se.WorkspaceID, se.ID, msgs, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderMessages(msgs, ""))
}

// session finds the {session_id} of the path in the {workspace} of the
// caller's org, for a caller who is a member there and, with a project's
// key, on its project's runtime (what names the action); on failure it has
// answered.
func (s *Server) session(w http.ResponseWriter, r *http.Request, what string) (sbx.Session, bool) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return sbx.Session{}, false
	}
	if _, ok := s.roleIn(w, r, ws, sbx.RoleMember, what); !ok {
		return sbx.Session{}, false
	}
	se, err := s.store.GetSession(r.Context(), ws.OrgID, ws.ID, r.PathValue("session_id"))
	if c := caller(r); err == nil && !c.OrgWide() {
		var rt sbx.Runtime
		if rt, err = s.store.Runtime(r.Context(), c.Key.ProjectID); err == nil && rt.ID != se.RuntimeID {
			err = sbx.Errorf(sbx.ENotFound, "session %s not found in this workspace", se.ID)
		}
	}
	if err != nil {
		s.error(w, r, err)
		return se, false
	}
	return se, true
}

// sessionRuntime finds runtime id in workspace ws for a session, as the
// runtimes routes find it: a project's key reaches its project's only; on
// failure it has answered.
func (s *Server) sessionRuntime(w http.ResponseWriter, r *http.Request, ws sbx.Workspace, id string) (sbx.Runtime, bool) {
	rt, err := s.reachableRuntime(r.Context(), caller(r), ws, id)
	if err != nil {
		s.error(w, r, err)
		return rt, false
	}
	return rt, true
}

func renderSession(se sbx.Session) apiv1.Session {
	return apiv1.Session{ID: se.ID, WorkspaceID: se.WorkspaceID, RuntimeID: se.RuntimeID, Title: se.Title, CreatedBy: se.CreatedBy,
		CreatedAt: se.CreatedAt, UpdatedAt: se.UpdatedAt}
}

func renderMessages(msgs []sbx.SessionMessage, next string) apiv1.SessionMessageList {
	return apiv1.SessionMessageList{Items: renderAll(msgs, func(m sbx.SessionMessage) apiv1.SessionMessage {
		return apiv1.SessionMessage{Seq: m.Seq, Role: m.Role, Content: m.Content, CreatedAt: m.CreatedAt}
	}), NextCursor: next}
}
