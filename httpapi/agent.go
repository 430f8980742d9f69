package httpapi

import (
	"io"
	"mime"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/lifecycle"
)

// agentRoutes are the agent's routes (apiv1/agent.go) as serve proxies them
// under /api/v1/sandboxes/{id}: commands, PTYs, files and code.
var agentRoutes = []struct{ method, pattern string }{
	{"POST", "/commands"},
	{"GET", "/commands"},
	{"GET", "/commands/{ref}"},
	{"DELETE", "/commands/{ref}"},
	{"GET", "/commands/{ref}/stream"},
	{"POST", "/commands/{ref}/stdin"},
	{"DELETE", "/commands/{ref}/stdin"},
	{"POST", "/commands/{ref}/signal"},
	{"POST", "/pty"},
	{"GET", "/pty/{ref}"},
	{"POST", "/pty/{ref}/resize"},
	{"GET", "/files"},
	{"PUT", "/files"},
	{"POST", "/files"},
	{"DELETE", "/files"},
	{"GET", "/files/list"},
	{"GET", "/files/stat"},
	{"POST", "/files/mkdir"},
	{"POST", "/files/move"},
	{"GET", "/files/watch"},
	{"POST", "/code/contexts"},
	{"GET", "/code/contexts"},
	{"DELETE", "/code/contexts/{ctx}"},
	{"POST", "/code/contexts/{ctx}/restart"},
	{"POST", "/code/contexts/{ctx}/interrupt"},
	{"POST", "/code/execute"},
}

// agentProxy passes a request for a sandbox's agent on, with the sandbox's
// access token in place of the caller's API key. The sandbox is resumed
// (or woken) first when it is paused.
func (s *Server) agentProxy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a, err := s.mgr.Agent(r.Context(), caller(r), id)
	if err != nil {
		s.error(w, r, err)
		return
	}
	defer a.Close()
	s.proxy(w, r, a, strings.TrimPrefix(r.URL.Path, "/api/v1/sandboxes/"+id))
}

// proxy sends r to the agent a reaches as path, streaming both ways
// (WebSocket upgrades included). When the sandbox stops running meanwhile
// (a.Context ends), the answer ends at once, saying why: a refusal before
// the agent answered; a last {"type":"error","error":…} line on an NDJSON
// stream (a command's output, a watch); a close frame (1001, going away)
// on a terminal's WebSocket.
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, a *lifecycle.AgentConn, path string) {
	sb, addr := a.Sandbox, a.Addr
	body := &readToEnd{ReadCloser: r.Body}
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		body.end.Store(true)
	}
	// unread closes the caller's connection after an answer that came
	// before the whole body (the agent refused it unread). In full duplex
	// (below), the server leaves the body alone until the handler returns,
	// then reads what is left of it to find the next request, while the
	// transport may still be reading it: that panicked serve's HTTP server
	// ("invalid concurrent Body.Read call", golang.org/issue/68560). And
	// what is left might be large, or never end.
	unread := func(h http.Header) {
		if !body.end.Load() {
			h.Set("Connection", "close")
		}
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.URL.Path, pr.Out.URL.RawPath = "http", agentcall.Host(sb, addr), path, ""
			if pr.Out.Body != nil && pr.Out.Body != http.NoBody {
				pr.Out.Body = body
			}
			pr.Out.Host = addr
			if !strings.HasPrefix(pr.Out.Header.Get("Authorization"), "Basic ") { // envd's user (E2B), never an sbx credential
				pr.Out.Header.Del("Authorization")
			}
			pr.Out.Header.Del("X-API-Key")
			pr.Out.Header.Set(apiv1.AccessTokenHeader, sb.AccessToken)
			if pr.Out.ContentLength < 0 && pr.Out.Body != nil {
				pr.Out.Body = largeChunks{pr.Out.Body}
			}
		},
		Transport:     agentcall.Transport,
		FlushInterval: -1,
		BufferPool:    responseBuffers,
		ModifyResponse: func(resp *http.Response) error {
			switch {
			case resp.StatusCode == http.StatusSwitchingProtocols:
				if rw, ok := resp.Body.(io.ReadWriteCloser); ok {
					resp.Body = newEndingUpgrade(rw, a.Stopped)
				}
				return nil // the connection is the WebSocket's now
			case resp.StatusCode >= 300 && resp.StatusCode < 400:
				// Never a redirect: a client following it would take the
				// request to another route.
				return sbx.Errorf(sbx.EProvider, "the agent of sandbox %s answered a redirect (%s)", sb.ProviderSandboxID, resp.Status)
			case isNDJSON(resp.Header):
				resp.Body = &endingStream{body: resp.Body, stopped: a.Stopped, split: ndjsonLines, last: ndjsonError}
			}
			unread(resp.Header)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			unread(w.Header())
			switch e := a.Stopped(); {
			case e != nil:
				s.error(w, r, e)
			case r.Context().Err() != nil: // the caller left
			case sbx.ErrorCode(err) == sbx.EProvider:
				s.error(w, r, err)
			default:
				s.error(w, r, sbx.Errorf(sbx.EProvider, "the agent of sandbox %s did not answer: %v", sb.ProviderSandboxID, err))
			}
		},
	}
	// The agent may answer before the transport has read the request body to
	// its end (POST /commands streams its events at once); by default the
	// server would then take the body away from under the transport, which
	// fails the request midway.
	if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
		s.error(w, r, err)
		return
	}
	rp.ServeHTTP(w, r.WithContext(a.Context))
}

// readToEnd is a request body that tells when it has been read to its end.
type readToEnd struct {
	io.ReadCloser
	end atomic.Bool
}

func (b *readToEnd) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.end.Store(true)
	}
	return n, err
}

// isNDJSON reports whether an answer is an event stream.
func isNDJSON(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == apiv1.NDJSON
}

// uncleanPath refuses, with a 400 in the envelope, a request whose path is
// not in the one form routes match: with a "." or ".." segment, an empty
// one (//), or, on the agent's routes, an escaped "/" in a segment.
// ServeMux would answer such a path with a redirect to its cleaned form,
// and a client that follows it (Go's does; Python's requests cleans the
// path itself) reaches another route: DELETE …/commands/.. is DELETE
// /api/v1/sandboxes/{id}. runtime is whether r came to a runtime URL. It
// reports whether it answered.
func (s *Server) uncleanPath(w http.ResponseWriter, r *http.Request, runtime bool) bool {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") {
		return false // not a path ServeMux cleans: "*", or a CONNECT's authority
	}
	// Segment by segment, without a slice of them: this runs on every
	// request. A last empty segment (a path ending in "/") is clean.
	for rest, more := p[1:], true; more; {
		var seg string
		seg, rest, more = strings.Cut(rest, "/")
		if (seg == "" && more) || seg == "." || seg == ".." {
			s.error(w, r, sbx.Invalid("path", "the path has a %q segment; send it in its clean form", seg))
			return true
		}
	}
	if (runtime || strings.HasPrefix(p, "/api/v1/sandboxes/")) && strings.Contains(strings.ToLower(r.URL.RawPath), "%2f") {
		s.error(w, r, sbx.Invalid("path", "a segment of the path has an escaped '/'"))
		return true
	}
	return false
}

// responseBuffers lend the proxy 256 KiB buffers for the agent's answers,
// not the default 32 KiB: a command's output or a file comes out of the
// sandbox faster than 32 KiB at a time, and each buffer is written (and,
// streaming, flushed) to the client once. requestBuffers serve largeChunks.
var responseBuffers, requestBuffers = newBufferPool(256 << 10), newBufferPool(1 << 20)

// bufferPool lends byte slices of one size (an httputil.BufferPool).
type bufferPool struct{ pool sync.Pool }

func newBufferPool(size int) *bufferPool {
	return &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, size); return &b }}}
}

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

// largeChunks passes on a body of unknown length in chunks as large as the
// caller's, up to 1 MiB, rather than the transport's 32 KiB: the agent pays
// for every chunk with reads that are dear in gVisor.
type largeChunks struct{ io.ReadCloser }

func (b largeChunks) WriteTo(w io.Writer) (int64, error) {
	buf := requestBuffers.Get()
	defer requestBuffers.Put(buf)
	return io.CopyBuffer(w, struct{ io.Reader }{b.ReadCloser}, buf)
}
