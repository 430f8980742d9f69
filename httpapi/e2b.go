package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// E2B's sandbox traffic: envd (commands, files, PTYs) on the agent's port,
// and the code interpreter on port 49999, reached as E2B's SDKs reach them:
// at a sandbox's host ({port}-{id}.{domain}) with the E2b-Sandbox-Port
// header they send on every such request (or a signed file URL, which
// carries none), or at serve's own address (E2B_SANDBOX_URL) with the
// E2b-Sandbox-Id and E2b-Sandbox-Port headers. The agent serves both under
// its /e2b/ routes; serve checks the caller as envd would before it wakes
// the sandbox: the sandbox's access token (envdAccessToken), a file URL's
// signature, or, for the code interpreter, the traffic token.

// The E2B headers that name a sandbox and its port at E2B_SANDBOX_URL.
const (
	e2bSandboxHeader = "E2b-Sandbox-Id"
	e2bPortHeader    = "E2b-Sandbox-Port"
	e2bTrafficHeader = "E2b-Traffic-Access-Token"
)

// codeInterpreterPort is the port of E2B's code interpreter.
const codeInterpreterPort = 49999

// e2bTraffic says whether a request is E2B's sandbox traffic, and to which
// sandbox and port. host, port and id are what the request's host named.
func e2bTraffic(r *http.Request, host bool, port int, id string) (int, string, bool) {
	if !host {
		id = r.Header.Get(e2bSandboxHeader)
		if id == "" {
			return 0, "", false
		}
		port = apiv1.AgentPort
		if p, err := strconv.Atoi(r.Header.Get(e2bPortHeader)); err == nil {
			port = p
		}
	} else if r.Header.Get(e2bPortHeader) == "" && !(r.URL.Path == "/files" && r.URL.Query().Has("signature")) {
		return 0, "", false
	}
	return port, id, port == apiv1.AgentPort || port == codeInterpreterPort
}

// e2bProxy takes E2B's traffic to a sandbox's agent.
func (s *Server) e2bProxy(w http.ResponseWriter, r *http.Request, port int, id string) {
	prefix, why := "/e2b/envd", "a call to its envd"
	if port == codeInterpreterPort {
		prefix, why = "/e2b/code", "a call to its code interpreter"
	}
	if port == apiv1.AgentPort && r.URL.Path == "/health" { // envd's health tells a paused sandbox, and never wakes it
		a, err := s.mgr.Reach(r.Context(), id, why, func(sb sbx.Sandbox) (bool, error) {
			if sb.State != sbx.StateRunning {
				return false, sbx.Errorf(sbx.EProvider, "sandbox %s is %s", id, sb.State)
			}
			return false, nil
		})
		if err != nil {
			s.error(w, r, err)
			return
		}
		a.Close()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	a, err := s.mgr.Reach(r.Context(), id, why, func(sb sbx.Sandbox) (bool, error) {
		return !sb.Preview.NoWake, e2bAllowed(r, port, sb, s.clock.Now())
	})
	if sbx.ErrorCode(err) == sbx.ENotFound { // as a wrong credential: the host tells a caller without one nothing
		err = sbx.Errorf(sbx.EUnauthorized, "a missing or wrong %s (envdAccessToken) for sandbox %s", apiv1.AccessTokenHeader, id)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	defer a.Close()
	r.Header.Del(e2bTrafficHeader)
	s.proxy(w, r, a, prefix+r.URL.Path)
}

// e2bAllowed checks a request's credential as envd and E2B's proxy do:
// the access token, or a signed file URL not expired, or, on the code
// interpreter's port, the traffic token.
func e2bAllowed(r *http.Request, port int, sb sbx.Sandbox, now time.Time) error {
	refused := sbx.Errorf(sbx.EUnauthorized, "a missing or wrong %s (envdAccessToken) for sandbox %s", apiv1.AccessTokenHeader, sb.ProviderSandboxID)
	if t := r.Header.Get(apiv1.AccessTokenHeader); t != "" {
		if subtle.ConstantTimeCompare([]byte(t), []byte(sb.AccessToken)) != 1 {
			return refused
		}
		return nil
	}
	if t := r.Header.Get(e2bTrafficHeader); t != "" && port == codeInterpreterPort && !strings.HasSuffix(r.URL.Path, "/execute") {
		if subtle.ConstantTimeCompare([]byte(t), []byte(sb.TrafficToken())) != 1 {
			return refused
		}
		return nil
	}
	q := r.URL.Query()
	if port != apiv1.AgentPort || r.URL.Path != "/files" || !q.Has("signature") {
		return refused
	}
	op := "read"
	if r.Method == http.MethodPost {
		op = "write"
	}
	raw := q.Get("path") + ":" + op + ":" + q.Get("username") + ":" + sb.AccessToken
	if exp := q.Get("signature_expiration"); exp != "" {
		raw += ":" + exp
		at, err := strconv.ParseInt(exp, 10, 64)
		if err != nil || now.Unix() > at {
			return sbx.Errorf(sbx.EUnauthorized, "the file URL's signature expired")
		}
	}
	sum := sha256.Sum256([]byte(raw))
	if subtle.ConstantTimeCompare([]byte(q.Get("signature")), []byte("v1_"+base64.RawStdEncoding.EncodeToString(sum[:]))) != 1 {
		return sbx.Errorf(sbx.EUnauthorized, "the file URL's signature is not the sandbox's")
	}
	return nil
}

// e2bDomain is the sandboxes' domain as E2B's SDKs join it to a port and
// a sandbox ID: serve's domain, with its public port.
func e2bDomain(cfg Config) string {
	d := cfg.Domain
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Port() != "" {
		d += ":" + u.Port()
	}
	return d
}
