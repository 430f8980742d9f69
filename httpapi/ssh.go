package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/sshauth"
)

// SSH, through package sshauth: an org's SSH keys (everyone in the org
// lists them; who may register or remove one is authz.ManageSSHKey) and a
// sandbox's short-lived SSH tokens (whoever reaches the sandbox).

func (s *Server) listSSHKeys(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	keys, next, err := s.sshauth.Keys(r.Context(), caller(r), p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.SSHKeyList{Items: renderAll(keys, renderSSHKey), NextCursor: next})
}

func (s *Server) addSSHKey(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	var body apiv1.AddSSHKeyRequest
	if !s.decode(w, r, &body) {
		return
	}
	k, err := s.sshauth.AddKey(r.Context(), caller(r), sshauth.KeySpec{PublicKey: body.PublicKey, Name: body.Name, User: body.User, ProjectID: body.ProjectID})
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, renderSSHKey(k))
}

func (s *Server) removeSSHKey(w http.ResponseWriter, r *http.Request) {
	if !s.inOrg(w, r) {
		return
	}
	k, err := s.sshauth.RemoveKey(r.Context(), caller(r), r.PathValue("ssh_key"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderSSHKey(k))
}

func renderSSHKey(k sbx.SSHKey) apiv1.SSHKey {
	return apiv1.SSHKey{ID: k.ID, Name: k.Name, Scope: k.Scope(), UserID: k.UserID, ProjectID: k.ProjectID, Type: k.Type,
		Fingerprint: k.Fingerprint, PublicKey: k.PublicKey, CreatedAt: k.CreatedAt}
}

// sandboxSSH mints a token that opens the sandbox through the SSH gateway
// and answers how to use it.
func (s *Server) sandboxSSH(w http.ResponseWriter, r *http.Request) {
	var body apiv1.SSHAccessRequest
	err := s.decodeBody(w, r, &body)
	var ttl time.Duration
	if err == nil {
		ttl, err = seconds("expires_in", body.ExpiresIn, false, int64(sshauth.MaxTokenTTL/time.Second))
	}
	if err == nil && s.cfg.SSH.Host == "" {
		err = sbx.Errorf(sbx.EUnavailable, "this server runs no SSH gateway (sbx serve --ssh-listen off)")
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	t, token, sb, err := s.sshauth.MintToken(r.Context(), caller(r), r.PathValue("id"), ttl)
	if err != nil {
		s.error(w, r, err)
		return
	}
	ep := s.cfg.SSH
	command := "ssh "
	if ep.Port != 22 {
		command += "-p " + strconv.Itoa(ep.Port) + " "
	}
	writeJSON(w, http.StatusCreated, apiv1.SSHAccess{User: sb.ProviderSandboxID, Host: ep.Host, Port: ep.Port, Token: token, ExpiresAt: t.ExpiresAt,
		KnownHosts: ep.KnownHosts, Command: command + sb.ProviderSandboxID + "@" + ep.Host})
}
