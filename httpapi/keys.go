package httpapi

import (
	"net/http"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// An org's API keys. Everyone in the org lists them (never their secrets);
// owners and admins make and revoke project keys and members' keys (of
// members whose role is not above theirs); only owners make or revoke
// org-wide keys, which act as owners.

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	keys, next, err := s.store.APIKeys(r.Context(), caller(r).Org.ID, p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.APIKeyList{Items: renderAll(keys, renderKey), NextCursor: next})
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	c := caller(r)
	var body apiv1.CreateKeyRequest
	if !s.body(w, r, &body) {
		return
	}
	var p problems
	if name := strings.TrimSpace(body.Name); name == "" || len(name) > 100 {
		p.Add("name", "name is required, at most 100 bytes, to tell the key apart (for example \"ci\")")
	}
	if body.User != "" && body.ProjectID != "" {
		p.Add("user", "a key is a member's (user) or a project's (project_id), not both")
	}
	if err := p.Err(); err != nil {
		s.error(w, r, err)
		return
	}
	k := sbx.APIKey{OrgID: c.Org.ID, Name: strings.TrimSpace(body.Name), ProjectID: body.ProjectID}
	err := need(c, sbx.RoleAdmin, "making an API key")
	switch {
	case err != nil:
	case body.User != "":
		var u sbx.User
		if u, err = s.store.GetUser(r.Context(), body.User); err != nil {
			break
		}
		k.UserID = u.ID
		err = s.notAboveUser(r, c, u.ID, "making a key for a member who is %s")
	case body.ProjectID == "":
		err = need(c, sbx.RoleOwner, "making an org-wide key (one that acts as an owner)")
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	k, secret, err := s.store.CreateAPIKey(r.Context(), k, s.clock.Now())
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, apiv1.CreatedKey{Key: renderKey(k), Secret: secret})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	c := caller(r)
	if err := onlyParams(r.URL.Query()); err != nil {
		s.error(w, r, err)
		return
	}
	k, err := s.store.GetAPIKey(r.Context(), c.Org.ID, r.PathValue("key"))
	if err == nil {
		err = need(c, sbx.RoleAdmin, "revoking an API key")
	}
	if err == nil {
		switch k.Scope() {
		case "org":
			err = need(c, sbx.RoleOwner, "revoking an org-wide key")
		case "member":
			err = s.notAboveUser(r, c, k.UserID, "revoking the key of a member who is %s")
		}
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	if k, err = s.store.RevokeAPIKey(r.Context(), c.Org.ID, k.ID, s.clock.Now()); err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderKey(k))
}

// notAboveUser refuses to act on a user whose role in the org is above the
// caller's; what has a %s for that role.
func (s *Server) notAboveUser(r *http.Request, c sbx.Caller, userID, what string) error {
	role, err := s.store.OrgRole(r.Context(), c.Org.ID, userID)
	if err != nil || role == "" {
		return err // not a member: the ledger refuses a new key; an old one may be revoked
	}
	return notAbove(c.Role, role, strings.Replace(what, "%s", string(role), 1))
}
