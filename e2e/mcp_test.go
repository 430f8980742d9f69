package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/apiv1"
)

// mcpKey sends every request with an API key (none when empty), through next.
type mcpKey struct {
	key  string
	next http.RoundTripper
}

func (k mcpKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if k.key != "" {
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	return k.next.RoundTrip(r)
}

// mcpHTTP connects the official MCP Go SDK's client to serve's
// /api/v1/mcp with key, every answer checked against the OpenAPI document.
func (s *server) mcpHTTP(ctx context.Context, key string) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: s.url + "/api/v1/mcp", HTTPClient: &http.Client{Transport: mcpKey{key, s.http.Transport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, tr, nil)
	if err == nil {
		s.t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// mcpStdio starts the built `sbx mcp` as an MCP client starts it, pointed
// at the server with key.
func (s *server) mcpStdio(ctx context.Context, key string) *mcp.ClientSession {
	cmd := exec.Command(sbxBin, "mcp")
	cmd.Env = append(os.Environ(), "SBX_URL="+s.url, "SBX_API_KEY="+key)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		s.t.Fatalf("sbx mcp: %v", err)
	}
	s.t.Cleanup(func() { cs.Close() })
	return cs
}

// tool calls a tool; out, when not nil, gets its structured content. A
// tool error is answered, not failed on: wantErr says which is expected.
func tool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, out any, wantErr bool) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError != wantErr {
		t.Fatalf("%s(%v): isError %v: %s", name, args, res.IsError, text.String())
	}
	if out != nil && !res.IsError {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: %s: %v", name, data, err)
		}
	}
	return text.String()
}

// mcpSandbox is what the tools say of a sandbox.
type mcpSandbox struct {
	ID        string `json:"id"`
	SandboxID string `json:"sandbox_id"`
	State     string `json:"state"`
}

// serve's MCP endpoint over the Memory provider: the tools listed, a
// sandbox's lifecycle through them, another org's key reaching none of
// it, and a request without a key a 401 before any MCP.
func TestMCPEndpoint(t *testing.T) {
	s := startServer(t, serverOpts{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a hang guard
	defer cancel()
	cs, err := s.mcpHTTP(ctx, s.key)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 14 {
		t.Fatalf("tools: %+v, %v", tools, err)
	}
	var sb mcpSandbox
	tool(t, ctx, cs, "create_sandbox", map[string]any{"template": "base"}, &sb, false)
	if sb.State != "running" {
		t.Fatalf("created %+v", sb)
	}
	for _, step := range []struct{ tool, state string }{{"pause_sandbox", "paused"}, {"resume_sandbox", "running"}, {"get_sandbox", "running"}} {
		if tool(t, ctx, cs, step.tool, map[string]any{"sandbox": sb.SandboxID}, &sb, false); sb.State != step.state {
			t.Fatalf("%s: %+v", step.tool, sb)
		}
	}
	if text := tool(t, ctx, cs, "create_sandbox", map[string]any{"template": "base", "cpu": -1}, nil, true); !strings.Contains(text, "cpu") {
		t.Errorf("a create the API refuses: %q", text)
	}

	var other apiv1.CreatedOrg
	s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "other", "kyc_status": "verified", "credits": "100"}, http.StatusCreated, &other)
	stranger, err := s.mcpHTTP(ctx, other.Secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"get_sandbox", "pause_sandbox", "delete_sandbox"} {
		if text := tool(t, ctx, stranger, name, map[string]any{"sandbox": sb.ID}, nil, true); !strings.Contains(text, "404") {
			t.Errorf("%s by another org: %q", name, text)
		}
	}
	var list struct{ Sandboxes []mcpSandbox }
	if tool(t, ctx, stranger, "list_sandboxes", map[string]any{}, &list, false); len(list.Sandboxes) != 0 {
		t.Errorf("another org lists %+v", list.Sandboxes)
	}

	if tool(t, ctx, cs, "delete_sandbox", map[string]any{"sandbox": sb.ID}, &sb, false); sb.State != "killed" {
		t.Fatalf("deleted: %+v", sb)
	}
	if _, err := s.mcpHTTP(ctx, ""); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("no key: %v", err)
	}
	s.failKey("", "POST", "/api/v1/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, http.StatusUnauthorized, "API key is required")
}
