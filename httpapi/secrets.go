package httpapi

import (
	"errors"
	"net/http"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/authz"
)

// An org's secrets. Values are write-only: no answer carries one. Everyone
// in the org lists the org's secrets, and a member's key its member's own
// too; owners and admins set and remove the org's; a member's key sets and
// removes its member's own. A name given to DELETE means the member's own
// secret before the org's of that name, unless ?scope= says which.

func (s *Server) listSecrets(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	c := caller(r)
	list, err := s.store.Secrets(r.Context(), c.Org.ID, c.User.ID)
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
	c := caller(r)
	var body apiv1.SetSecretRequest
	if !s.decode(w, r, &body) {
		return
	}
	var p problems
	if body.Scope != "" && body.Scope != sbx.SecretScopeOrg && body.Scope != sbx.SecretScopeUser {
		p.Add("scope", "scope %q must be org or user", body.Scope)
	}
	var e *sbx.Error
	if errors.As(sbx.CheckSecret(body.Name, body.Value), &e) {
		p.Problems = append(p.Problems, e.Fields...)
	}
	if err := p.Err(); err != nil {
		s.error(w, r, err)
		return
	}
	user, err := secretScope(c, body.Scope, "setting")
	if err != nil {
		s.error(w, r, err)
		return
	}
	sec, created, err := s.store.PutSecret(r.Context(), c.Org.ID, user, body.Name, body.Value, s.clock.Now())
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
	c, q := caller(r), r.URL.Query()
	scope, ref := q.Get("scope"), r.PathValue("secret")
	user := c.User.ID // whose own secrets the lookup sees beside the org's
	var err error
	switch scope {
	case "":
	case sbx.SecretScopeOrg:
		user = ""
	case sbx.SecretScopeUser:
		_, err = secretScope(c, scope, "removing")
	default:
		err = sbx.Invalid("scope", "scope %q must be org or user", scope)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	sec, err := s.store.GetSecret(r.Context(), c.Org.ID, user, ref)
	switch {
	case err != nil:
	case scope == sbx.SecretScopeUser && sec.UserID == "":
		err = sbx.Errorf(sbx.ENotFound, "secret %s not found among this member's own", ref)
	case sec.UserID == "":
		err = authz.Need(c, sbx.RoleAdmin, "removing an org secret")
	}
	if err == nil {
		sec, err = s.store.DeleteSecret(r.Context(), c.Org.ID, user, sec.ID)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderSecret(sec))
}

// secretScope checks that the caller may change secrets of scope (empty:
// org) and answers the user ID that scope stands for: empty for the org's,
// the caller's member for a user secret.
func secretScope(c sbx.Caller, scope, verb string) (string, error) {
	if scope == sbx.SecretScopeUser {
		if c.User.ID == "" {
			return "", sbx.Errorf(sbx.EForbidden, "%s a user secret needs a member's key: a user secret is the own of the member a key acts as, "+
				"and this key (scope %s) acts for no member", verb, c.Key.Scope())
		}
		return c.User.ID, nil
	}
	return "", authz.Need(c, sbx.RoleAdmin, verb+" an org secret")
}

func renderSecret(sec sbx.Secret) apiv1.Secret {
	return apiv1.Secret{ID: sec.ID, Name: sec.Name, Scope: sec.Scope(), UserID: sec.UserID, CreatedAt: sec.CreatedAt, UpdatedAt: sec.UpdatedAt}
}
