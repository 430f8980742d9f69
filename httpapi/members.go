package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/tenancy"
)

// A workspace's members, through the tenancy service: everyone the
// workspace reaches reads them; its owners and admins add and remove them.
// A member beyond the plan's limit pauses the workspace's compute.

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	list, next, err := s.tenancy.Members(r.Context(), caller(r), ws, p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.MemberList{Items: renderAll(list, renderMember), NextCursor: next})
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	var body apiv1.AddMemberRequest
	if !s.decode(w, r, &body) {
		return
	}
	ch, err := s.tenancy.AddMember(r.Context(), caller(r), ws, tenancy.MemberSpec{Email: body.Email, Name: body.Name, Role: sbx.Role(body.Role)})
	s.memberChange(w, r, http.StatusCreated, ch, err)
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	ch, err := s.tenancy.RemoveMember(r.Context(), caller(r), ws, r.PathValue("member"))
	s.memberChange(w, r, http.StatusOK, ch, err)
}

func (s *Server) memberChange(w http.ResponseWriter, r *http.Request, status int, ch lifecycle.MemberChange, err error) {
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, status, apiv1.MemberChange{Member: renderMember(ch.Member), Members: ch.Count.Members, MemberLimit: ch.Count.Max,
		Paused: providerIDs(ch.Paused), Resumed: providerIDs(ch.Resumed)})
}
