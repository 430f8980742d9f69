package httpapi

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx"
)

// serveMCP is POST /api/v1/mcp: the Model Context Protocol over streamable
// HTTP (package mcpserver), whose tool calls are requests to this API made
// in-process with the caller's own key, so that they are authorized as the
// caller's other requests are. authenticate has answered a request without
// a valid key with a 401 already. A refusal the MCP library words as plain
// text (a body too large, a wrong Accept) is answered in the API's error
// envelope; its JSON-RPC errors, which clients act on, pass as they are.
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	pw := &plainRefusal{ResponseWriter: w}
	s.mcp.ServeHTTP(pw, r)
	if pw.status != 0 {
		s.error(w, r, sbx.Errorf(mcpCode(pw.status), "%s", strings.TrimSpace(pw.text.String())))
	}
}

// plainRefusal passes an answer on, but keeps back a refusal in plain text
// (status and text), for serveMCP to answer in the envelope.
type plainRefusal struct {
	http.ResponseWriter
	status int
	text   bytes.Buffer
}

func (p *plainRefusal) WriteHeader(status int) {
	if status >= 400 && strings.HasPrefix(p.Header().Get("Content-Type"), "text/plain") {
		p.status = status
		p.Header().Del("Content-Type")
		p.Header().Del("X-Content-Type-Options")
		return
	}
	p.ResponseWriter.WriteHeader(status)
}

func (p *plainRefusal) Write(b []byte) (int, error) {
	if p.status != 0 {
		return p.text.Write(b)
	}
	return p.ResponseWriter.Write(b)
}

func (p *plainRefusal) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// mcpCode is the error code of an HTTP status the MCP library refused with.
func mcpCode(status int) sbx.Code {
	for _, c := range []sbx.Code{sbx.EInvalid, sbx.ETooLarge, sbx.EUnsupportedMedia, sbx.ENotFound, sbx.EForbidden, sbx.EMethodNotAllowed, sbx.EConflict} {
		if c.HTTPStatus() == status {
			return c
		}
	}
	return sbx.EInternal
}
