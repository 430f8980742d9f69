package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/lifecycle"
)

// A workspace's members. Everyone the workspace reaches reads them; owners and admins
// of the workspace add and remove them, never with or of a role above their
// own. A member beyond the plan's limit pauses the workspace's compute
// (lifecycle/members.go).

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	if _, ok := s.roleIn(w, r, ws, sbx.RoleMember, "listing members"); !ok {
		return
	}
	list, next, err := s.store.Members(r.Context(), ws.OrgID, ws.ID, p)
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
	role := sbx.Role(body.Role)
	if body.Role == "" {
		role = sbx.RoleMember
	}
	if !role.Valid() {
		s.error(w, r, sbx.Invalid("role", "role %q must be owner, admin or member", body.Role))
		return
	}
	mine, ok := s.roleIn(w, r, ws, sbx.RoleAdmin, "adding a member")
	if !ok {
		return
	}
	if err := authz.NotAbove(mine, role, "adding a member as "+string(role)); err != nil {
		s.error(w, r, err)
		return
	}
	ch, err := s.mgr.AddMember(r.Context(), ws.OrgID, ws.ID, body.Email, body.Name, role)
	s.memberChange(w, r, http.StatusCreated, ch, err)
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	mine, ok := s.roleIn(w, r, ws, sbx.RoleAdmin, "removing a member")
	if !ok {
		return
	}
	m, err := s.store.GetMember(r.Context(), ws.OrgID, ws.ID, r.PathValue("member"))
	if err == nil {
		err = authz.NotAbove(mine, m.Role, "removing a member who is "+string(m.Role))
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	ch, err := s.mgr.RemoveMember(r.Context(), ws.OrgID, ws.ID, m.User.ID)
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
