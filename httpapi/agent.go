package httpapi

import (
	"io"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
)

// agentRoutes are the agent's routes (apiv1/agent.go) as serve proxies them
// under /api/v1/sandboxes/{id}: commands, PTYs and files.
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
}

// agentProxy passes a request for a sandbox's agent on, with the sandbox's
// access token in place of the caller's API key. The sandbox is resumed
// (or woken) first when it is paused.
func (s *Server) agentProxy(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sb, addr, err := s.mgr.Agent(r.Context(), caller(r), id)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.proxy(w, r, sb, addr, strings.TrimPrefix(r.URL.Path, "/api/v1/sandboxes/"+id))
}

// proxy sends r to the agent at addr as path, streaming both ways
// (WebSocket upgrades included).
func (s *Server) proxy(w http.ResponseWriter, r *http.Request, sb sbx.Sandbox, addr, path string) {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.URL.Path, pr.Out.URL.RawPath = "http", agentcall.Host(sb, addr), path, ""
			pr.Out.Host = addr
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("X-API-Key")
			pr.Out.Header.Set(apiv1.AccessTokenHeader, sb.AccessToken)
			if pr.Out.ContentLength < 0 && pr.Out.Body != nil {
				pr.Out.Body = largeChunks{pr.Out.Body}
			}
		},
		Transport:     agentcall.Transport,
		FlushInterval: -1,
		BufferPool:    responseBuffers,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the caller left
			}
			s.error(w, r, sbx.Errorf(sbx.EProvider, "the agent of sandbox %s did not answer: %v", sb.ProviderSandboxID, err))
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
	rp.ServeHTTP(w, r)
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
