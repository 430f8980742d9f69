package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/tenancy"
)

// An org's API keys, through the tenancy service: everyone in the org lists
// them (never their secrets); who may make or revoke one is
// authz.Policy.ManageKey.

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	keys, next, err := s.tenancy.Keys(r.Context(), caller(r), p)
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
	var body apiv1.CreateKeyRequest
	if !s.decode(w, r, &body) {
		return
	}
	k, secret, err := s.tenancy.CreateKey(r.Context(), caller(r), tenancy.KeySpec{Name: body.Name, User: body.User, ProjectID: body.ProjectID})
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
	k, err := s.tenancy.RevokeKey(r.Context(), caller(r), r.PathValue("key"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderKey(k))
}
