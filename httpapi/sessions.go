package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// A workspace's agent sessions, through package sessions (who reaches which:
// members of the workspace; a project's key only its project's runtime's).

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	list, next, err := s.sessions.List(r.Context(), caller(r), r.PathValue("workspace"), r.URL.Query().Get("runtime_id"), p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.SessionList{Items: renderAll(list, renderSession), NextCursor: next})
}

// createSession starts a session on a runtime of the workspace.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	var body apiv1.CreateSessionRequest
	if !s.decode(w, r, &body) {
		return
	}
	se, err := s.sessions.Create(r.Context(), caller(r), r.PathValue("workspace"), body.RuntimeID, body.Title)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderSession(se))
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	se, err := s.sessions.Get(r.Context(), caller(r), r.PathValue("workspace"), r.PathValue("session_id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderSession(se))
}

// listSessionMessages answers a page of a session's transcript by seq.
func (s *Server) listSessionMessages(w http.ResponseWriter, r *http.Request) {
	p, ok := s.page(w, r)
	if !ok || !s.inOrg(w, r) {
		return
	}
	msgs, next, err := s.sessions.Messages(r.Context(), caller(r), r.PathValue("workspace"), r.PathValue("session_id"), p)
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
	if !s.decode(w, r, &body) || !s.inOrg(w, r) {
		return
	}
	msgs := make([]sbx.SessionMessage, len(body.Messages))
	for i, m := range body.Messages {
		msgs[i] = sbx.SessionMessage{Role: m.Role, Content: m.Content}
	}
	msgs, err := s.sessions.Append(r.Context(), caller(r), r.PathValue("workspace"), r.PathValue("session_id"), msgs)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderMessages(msgs, ""))
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
