package httpapi

import (
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// sandboxHost splits a request's host of the form {port}-{sandboxID}.{domain}
// (a runtime or preview URL); ok is false for any other host.
func (s *Server) sandboxHost(r *http.Request) (port int, id string, ok bool) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	label, ok := strings.CutSuffix(strings.ToLower(host), "."+s.cfg.Domain)
	if !ok {
		return 0, "", false
	}
	p, id, ok := strings.Cut(label, "-")
	if !ok || id == "" {
		return 0, "", false
	}
	port, err := strconv.Atoi(p)
	return port, id, err == nil
}

// runtimeProxy serves a sandbox's runtime URL (its agent port's host): the
// agent's whole API, the caller authenticated by the sandbox's access
// token. A paused sandbox is resumed first.
func (s *Server) runtimeProxy(w http.ResponseWriter, r *http.Request, id string) {
	if path.Clean(r.URL.Path) == "/token" { // only serve rotates the token (connect with rotateAccessToken), never its holder
		s.error(w, r, sbx.Errorf(sbx.EForbidden, "the access token is rotated through connect (rotateAccessToken), not at the runtime URL"))
		return
	}
	token := r.Header.Get(apiv1.AccessTokenHeader)
	if token == "" {
		s.error(w, r, sbx.Errorf(sbx.EUnauthorized, "the runtime URL needs the sandbox's access token in %s", apiv1.AccessTokenHeader))
		return
	}
	a, err := s.mgr.AgentOf(r.Context(), id, token)
	if err != nil {
		s.error(w, r, err)
		return
	}
	defer a.Close()
	s.proxy(w, r, a, r.URL.Path)
}
