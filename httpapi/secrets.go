package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// An org's secrets, through package secrets (who sees, sets and removes
// which; values are write-only: no answer carries one).

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	list, err := s.secrets.List(r.Context(), caller(r))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.SecretList{Items: renderAll(list, renderSecret)})
}

// setSecret makes a secret (201) or gives the one of that name in that
// scope a new value (200).
func (s *Server) setSecret(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	var body apiv1.SetSecretRequest
	if !s.decode(w, r, &body) {
		return
	}
	sec, created, err := s.secrets.Set(r.Context(), caller(r), body.Scope, body.Name, body.Value)
	if err != nil {
		s.error(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, renderSecret(sec))
}

// deleteSecret removes the secret {secret} names (an ID or a name), value
// and all, and answers what it was.
func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	sec, err := s.secrets.Delete(r.Context(), caller(r), r.URL.Query().Get("scope"), r.PathValue("secret"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderSecret(sec))
}

func renderSecret(sec sbx.Secret) apiv1.Secret {
	return apiv1.Secret{ID: sec.ID, Name: sec.Name, Scope: sec.Scope(), UserID: sec.UserID, CreatedAt: sec.CreatedAt, UpdatedAt: sec.UpdatedAt}
}
