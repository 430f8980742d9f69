package httpapi

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/osbapi"
)

// OpenSandbox's sandbox traffic: execd (commands, files), which the SDKs
// reach at the endpoint osbapi answers for execd's port:
// {serve}/opensandbox/execd/{sandboxID}/…, with the sandbox's access token
// in X-EXECD-ACCESS-TOKEN. serve checks the token before it wakes the
// sandbox, and the agent serves execd's API under agentExecdPrefix. Errors
// are OpenSandbox's ({"code", "message"}).

// agentExecdPrefix is where the agent serves execd's API.
const agentExecdPrefix = "/opensandbox/execd"

// isExecdPath reports whether p is under osbapi.ExecdPrefix.
func isExecdPath(p string) bool { return strings.HasPrefix(p, osbapi.ExecdPrefix) }

// execdProxy takes OpenSandbox's execd traffic to a sandbox's agent.
func (s *Server) execdProxy(w http.ResponseWriter, r *http.Request) {
	id, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, osbapi.ExecdPrefix), "/")
	token := r.Header.Get(osbapi.ExecdTokenHeader)
	refused := sbx.Errorf(sbx.EUnauthorized, "a missing or wrong %s (the endpoint's headers) for sandbox %s", osbapi.ExecdTokenHeader, id)
	a, err := s.mgr.Reach(r.Context(), id, "a call to its execd", func(sb sbx.Sandbox) (bool, error) {
		if token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(sb.AccessToken)) != 1 {
			return false, refused
		}
		return !sb.Preview.NoWake, nil
	})
	if sbx.ErrorCode(err) == sbx.ENotFound { // as a wrong token: the path tells a caller without one nothing
		err = refused
	}
	if err != nil {
		s.osb.Error(w, r, err)
		return
	}
	defer a.Close()
	r.Header.Del(osbapi.ExecdTokenHeader)
	r.Header.Del(osbapi.APIKeyHeader) // the SDKs send their API key to execd too: it never reaches a sandbox
	s.proxy(w, r, a, agentExecdPrefix+"/"+path)
}

// osbHost is serve's public host[:port], where OpenSandbox's endpoints begin.
func osbHost(cfg Config) string {
	u, err := url.Parse(cfg.PublicURL)
	if err != nil {
		return ""
	}
	return u.Host + strings.TrimSuffix(u.Path, "/")
}
