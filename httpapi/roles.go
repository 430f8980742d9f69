package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx/authz"
)

// Authorization is package authz's policy, which the services ask (and
// handlers not behind one yet, through s.policy). The operator's routes
// need the operator's key: operator refuses any other before its body is
// read, and the service refuses it again.

// operator answers a 403 unless the caller's key is the operator's.
func (s *Server) operator(w http.ResponseWriter, r *http.Request) bool {
	if err := authz.Operator(caller(r), r.Method+" "+r.URL.Path); err != nil {
		s.error(w, r, err)
		return false
	}
	return true
}
