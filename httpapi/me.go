package httpapi

import (
	"net/http"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/version"
)

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	c := caller(r)
	me := apiv1.Me{
		Org:       apiv1.Named{ID: c.Org.ID, Name: c.Org.Name},
		Workspace: apiv1.Named{ID: c.Workspace.ID, Name: c.Workspace.Name},
		Project:   apiv1.Named{ID: c.Project.ID, Name: c.Project.Name},
		Key:       apiv1.Key{ID: c.Key.ID, Name: c.Key.Name, Prefix: c.Key.Prefix, Scope: c.Key.Scope()},
		Role:      string(c.Role), Operator: c.Key.Operator,
		Server: version.Get(),
	}
	if c.User.ID != "" {
		u := renderUser(c.User)
		me.User = &u
	}
	writeJSON(w, http.StatusOK, me)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
