package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/preview"
)

// Preview traffic: a request to {port}-{sandboxID}.{domain}, or to
// /api/v1/sandboxes/{id}/ports/{port}/… (for clients that cannot use
// wildcard hosts), goes to what listens on that port in the sandbox, HTTP
// and WebSocket alike, streaming both ways. Package preview decides who
// gets through and whether a paused sandbox wakes; this file only reads the
// credentials, passes the request on and maps errors.
//
// The credentials sbx reads are taken off the request before the app sees
// it: X-API-Key, the traffic token's header, its query parameter and its
// cookie. Authorization is the app's own and passes through untouched.

const portsPrefix = "/api/v1/sandboxes/"

// isPortsPath reports whether p is under /api/v1/sandboxes/{id}/ports/.
func isPortsPath(p string) bool {
	rest, ok := strings.CutPrefix(p, portsPrefix)
	if !ok {
		return false
	}
	_, rest, _ = strings.Cut(rest, "/")
	return strings.HasPrefix(rest, "ports/")
}

// portsProxy serves /api/v1/sandboxes/{id}/ports/{port}/{path…}: the app
// sees /{path…}.
func (s *Server) portsProxy(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, portsPrefix)
	id, rest, _ := strings.Cut(rest, "/")
	p, path, _ := strings.Cut(strings.TrimPrefix(rest, "ports/"), "/")
	port, err := strconv.Atoi(p)
	if err != nil {
		s.error(w, r, sbx.Invalid("port", "the port in the path must be a number, not %q", p))
		return
	}
	s.previewProxy(w, r, port, id, "/"+path, true)
}

// previewProxy passes r on to port of sandbox id as path. byPath (on the
// API's own host, which every sandbox's path-based previews share) what
// the app answers runs in a sandboxed, opaque origin
// (Content-Security-Policy: sandbox), and no cookie passes either way, so
// that a page one tenant serves there can read neither the API's origin
// nor another sandbox's previews, nor set or see their cookies; and no
// cookie opens it. A browser uses the preview host instead.
func (s *Server) previewProxy(w http.ResponseWriter, r *http.Request, port int, id, path string, byPath bool) {
	cred, fromQuery, err := s.previewCredentials(r, !byPath)
	if err != nil {
		s.error(w, r, err)
		return
	}
	a, err := s.previews.Open(r.Context(), cred, id, port)
	if err != nil {
		s.error(w, r, err)
		return
	}
	defer a.Close()
	if cred.FromCookie && !sameSiteRequest(r) {
		s.error(w, r, sbx.Errorf(sbx.EForbidden, "a request from another site does not carry this preview's cookie: open the preview itself, or send the traffic token in %s", apiv1.TrafficTokenHeader))
		return
	}
	if fromQuery && !byPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		s.keepToken(w, r, cred.Token)
		return
	}
	addr, err := a.PortAddr(port)
	if err != nil {
		s.error(w, r, err)
		return
	}
	sb := a.Sandbox
	host := r.Host
	if sb.Preview.LocalHost {
		host = "localhost:" + strconv.Itoa(port)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetXForwarded()
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", agentcall.Host(sb, addr)
			pr.Out.URL.Path, pr.Out.URL.RawPath = path, ""
			pr.Out.Host = host
			pr.Out.Header.Del("X-API-Key")
			pr.Out.Header.Del(apiv1.TrafficTokenHeader)
			if isAPIKeyAuthorization(pr.Out.Header) {
				pr.Out.Header.Del("Authorization")
			}
			if byPath {
				pr.Out.Header.Del("Cookie")
			} else {
				dropTokenCookie(pr.Out)
			}
			q := pr.Out.URL.Query()
			if q.Has(apiv1.TrafficTokenParam) {
				q.Del(apiv1.TrafficTokenParam)
				pr.Out.URL.RawQuery = q.Encode()
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if byPath {
				resp.Header.Set("Content-Security-Policy", "sandbox allow-scripts allow-forms allow-popups allow-downloads")
				resp.Header.Del("Set-Cookie")
			}
			return nil
		},
		Transport: previewTransport,
		// No FlushInterval: a streamed answer (chunked, or server-sent
		// events) is flushed as it comes anyway, and a small one of known
		// length goes out in one write, headers and body together.
		BufferPool: responseBuffers,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			switch e := a.Stopped(); {
			case e != nil:
				s.error(w, r, e)
			case r.Context().Err() != nil: // the caller left
			case errors.Is(err, syscall.ECONNREFUSED):
				s.error(w, r, sbx.Errorf(sbx.EProvider, "no process listens on port %d in sandbox %s", port, sb.ProviderSandboxID))
			default: // the cause names the sandbox's own address: logged, not answered
				s.log.Warn("preview: no answer", "sandbox", sb.ProviderSandboxID, "port", port, "err", err)
				s.error(w, r, sbx.Errorf(sbx.EProvider, "port %d of sandbox %s did not answer", port, sb.ProviderSandboxID))
			}
		},
	}
	rp.ServeHTTP(w, r.WithContext(a.Context))
}

// previewCredentials reads what r carries to open a preview: an API key
// (X-API-Key, or Authorization when it bears an sbx API key; any other
// Authorization is the app's), and a token from the header, the query
// (fromQuery) or, with cookies, the cookie, in that order.
func (s *Server) previewCredentials(r *http.Request, cookies bool) (cred preview.Credentials, fromQuery bool, err error) {
	secret := r.Header.Get("X-API-Key")
	if secret == "" && isAPIKeyAuthorization(r.Header) {
		secret = strings.TrimSpace(r.Header.Get("Authorization")[len("Bearer "):])
	}
	if secret != "" {
		c, err := s.tenancy.Authenticate(r.Context(), secret)
		if err != nil {
			return cred, false, err
		}
		cred.Caller = &c
	}
	if cred.Token = r.Header.Get(apiv1.TrafficTokenHeader); cred.Token != "" {
		return cred, false, nil
	}
	if cred.Token = r.URL.Query().Get(apiv1.TrafficTokenParam); cred.Token != "" {
		return cred, true, nil
	}
	if c, err := r.Cookie(apiv1.TrafficTokenParam); err == nil && cookies {
		cred.Token, cred.FromCookie = c.Value, true
	}
	return cred, false, nil
}

// keepToken answers a browser that opened a preview host with the token
// in its URL: the token goes into an HTTP-only cookie of that host alone,
// and a redirect to the same URL without it, so it leaves the address bar
// and the app never sees it.
func (s *Server) keepToken(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{Name: apiv1.TrafficTokenParam, Value: token, Path: "/",
		HttpOnly: true, Secure: r.TLS != nil || strings.HasPrefix(s.cfg.PublicURL, "https:"), SameSite: http.SameSiteLaxMode})
	u := url.URL{Path: "/" + strings.TrimLeft(r.URL.Path, "/"), RawQuery: r.URL.RawQuery} // one leading slash: never //other.host
	q := u.Query()
	q.Del(apiv1.TrafficTokenParam)
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
}

// sameSiteRequest reports whether a browser sent r from the preview's own
// origin, or as a navigation the user made (a link opened, an address
// typed): the only requests the preview's cookie opens it for. Every
// preview host of a domain is the same site, so SameSite alone would let
// one tenant's page send requests to another's preview with its cookie.
// A client that sends no Sec-Fetch-Site is not a browser that does this.
func sameSiteRequest(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return r.Header.Get("Sec-Fetch-Mode") == "navigate" && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// isAPIKeyAuthorization reports whether h's Authorization bears an sbx API
// key: sbx's own credential, never passed to an app.
func isAPIKeyAuthorization(h http.Header) bool {
	scheme, token, _ := strings.Cut(h.Get("Authorization"), " ")
	return strings.EqualFold(scheme, "Bearer") && strings.HasPrefix(strings.TrimSpace(token), sbx.APIKeyPrefix)
}

// dropTokenCookie removes the preview's own cookie from a request, keeping
// the app's.
func dropTokenCookie(r *http.Request) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if c.Name != apiv1.TrafficTokenParam {
			r.AddCookie(c)
		}
	}
}

// previewTransport reaches sandbox ports. Its connections are pooled per
// sandbox and pause (the URL host is agentcall.Host's label), so none
// outlives the sandbox it was made to; a port nothing listens on is
// refused at once (a 502), not retried.
var previewTransport = &http.Transport{
	DialContext: func(ctx context.Context, network, host string) (net.Conn, error) {
		return agentcall.DialPort(ctx, network, agentcall.AddrOf(host))
	},
	MaxIdleConnsPerHost: 32,
	IdleConnTimeout:     30 * time.Second,
	ForceAttemptHTTP2:   false,
}

// previewURL is the preview URL of port of sb through this server, with
// {port} in place of the number when port is 0.
func (s *Server) previewURL(sb sbx.Sandbox, port int) string {
	u, err := url.Parse(s.cfg.PublicURL)
	if err != nil || u.Host == "" {
		return ""
	}
	p := "{port}"
	if port != 0 {
		p = strconv.Itoa(port)
	}
	host := p + "-" + sb.ProviderSandboxID + "." + s.cfg.Domain
	if hp := u.Port(); hp != "" {
		host += ":" + hp
	}
	return u.Scheme + "://" + host
}

// Preview links.

func (s *Server) createPreviewLink(w http.ResponseWriter, r *http.Request) {
	var body apiv1.CreatePreviewLinkRequest
	if !s.decode(w, r, &body) {
		return
	}
	spec := preview.LinkSpec{Port: body.Port}
	if body.Expires != nil {
		spec.Expires = *body.Expires
	}
	l, err := s.previews.CreateLink(r.Context(), caller(r), r.PathValue("id"), spec)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out := renderPreviewLink(l.PreviewLink)
	out.URL = s.previewURL(l.Sandbox, l.Port) + "/?" + apiv1.TrafficTokenParam + "=" + url.QueryEscape(l.Token)
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listPreviewLinks(w http.ResponseWriter, r *http.Request) {
	links, err := s.previews.Links(r.Context(), caller(r), r.PathValue("id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.PreviewLinkList{Items: renderAll(links, renderPreviewLink)})
}

func (s *Server) revokePreviewLink(w http.ResponseWriter, r *http.Request) {
	l, err := s.previews.RevokeLink(r.Context(), caller(r), r.PathValue("id"), r.PathValue("link_id"))
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, renderPreviewLink(l))
}

func renderPreviewLink(l sbx.PreviewLink) apiv1.PreviewLink {
	return apiv1.PreviewLink{ID: l.ID, Port: l.Port, CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt, RevokedAt: timePtr(l.RevokedAt)}
}
