package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx"
)

// Authorization is package authz's policy, which the services ask (and
// handlers not behind one yet, through s.policy). The operator's routes
// need the operator's key: operator refuses any other before its body is
// read, and the service refuses it again.

// operator answers a 403 unless the caller's key is the operator's.
func (s *Server) operator(w http.ResponseWriter, r *http.Request) bool {
	if caller(r).Key.Operator {
		return true
	}
	s.error(w, r, sbx.Errorf(sbx.EForbidden, "%s %s is the operator's: it needs the operator's key (the admin key `sbx serve` made at first start)", r.Method, r.URL.Path))
	return false
}
