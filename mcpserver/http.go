package mcpserver

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/inproc"
)

// HTTPHandler serves the tools over MCP's streamable HTTP transport,
// stateless (each POST is a whole exchange; there is no session to hijack),
// answering JSON. Each request gets a server of its own whose client calls
// api, the API's own handler, in this process (package inproc), with the
// request's API key as key(r) finds it: every tool call is an API request
// of that caller's, authenticated and authorized as any other. base is the
// URL the in-process requests are addressed to (the API's public URL).
func HTTPHandler(api http.Handler, base string, key func(*http.Request) string) http.Handler {
	httpc := &http.Client{Transport: inproc.Transport(api)}
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return New(client.New(client.Options{URL: base, APIKey: key(r), HTTPClient: httpc}))
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true,
		// serve's listener decides who reaches it (and may sit behind a
		// proxy that keeps the Host), and every request carries an API key.
		DisableLocalhostProtection: true})
}
