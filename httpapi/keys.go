package httpapi

import (
	"net/http"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// An org's API keys. Everyone in the org lists them (never their secrets);
// who may make or revoke one is authz.Policy.ManageKey: an admin only keys
// that reach no workspace it does not administer, with no role above its
// own there; only owners keys that act as owners.

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
	if !s.decode(w, r, &body) {
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
	var err error
	if body.User != "" {
		var u sbx.User
		u, err = s.store.GetUser(r.Context(), body.User)
		k.UserID = u.ID
	}
	if err == nil {
		err = s.policy.ManageKey(r.Context(), c, k, "making")
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
	k, err := s.store.GetAPIKey(r.Context(), c.Org.ID, r.PathValue("key"))
	if err == nil {
		err = s.policy.ManageKey(r.Context(), c, k, "revoking")
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
