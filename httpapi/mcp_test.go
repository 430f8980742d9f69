package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/httpapi"
	"github.com/sbxdev/sbx/internal/agenttest"
	"github.com/sbxdev/sbx/internal/contract"
	"github.com/sbxdev/sbx/ledger"
)

// withKey sends every request with an API key, through next.
type withKey struct {
	key  string
	next http.RoundTripper
}

func (k withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.next.RoundTrip(r)
}

// mcpSession connects the official MCP client to serve's /api/v1/mcp with key.
func mcpSession(t *testing.T, ctx context.Context, url, key string, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url + "/api/v1/mcp", HTTPClient: &http.Client{Transport: withKey{key, rt}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool and answers its result, decoding its structured
// content into out when not nil.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: %s: %v", name, data, err)
		}
	}
	return res
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// serve's MCP endpoint: the official client lists the tools and drives a
// sandbox through them as the key's caller, every answer as the OpenAPI
// document says; another org's key reaches none of it.
func TestMCPEndpoint(t *testing.T) {
	s := agenttest.Serve(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a hang guard
	defer cancel()
	v, err := contract.New(httpapi.OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, err := range v.Errors() {
			t.Errorf("a response does not match the OpenAPI document: %v", err)
		}
	})
	checked := v.Transport(nil)
	cs := mcpSession(t, ctx, s.URL, s.Key, checked)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 14 {
		t.Fatalf("tools: %v, %v", tools, err)
	}

	var sb struct{ ID, State string }
	if res := callTool(t, ctx, cs, "create_sandbox", map[string]any{"template": "base"}, &sb); res.IsError || sb.State != "running" {
		t.Fatalf("create_sandbox: %s", toolText(res))
	}
	var out struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
	}
	if res := callTool(t, ctx, cs, "run_command", map[string]any{"sandbox": sb.ID, "command": "echo hi > greeting; cat greeting"}, &out); res.IsError || out.Stdout != "hi\n" {
		t.Fatalf("run_command: %s", toolText(res))
	}
	if res := callTool(t, ctx, cs, "read_file", map[string]any{"sandbox": sb.ID, "path": "greeting"}, nil); res.IsError || toolText(res) != "hi\n" {
		t.Fatalf("read_file: %s", toolText(res))
	}

	// Another org's key: its tools reach nothing of this org's.
	other, err := s.Store.CreateOrgWith(ctx, ledger.NewOrg{Name: "other", KYCStatus: sbx.KYCVerified, Credits: 1_000_000_000,
		Key: sbx.APIKey{Name: "other"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	stranger := mcpSession(t, ctx, s.URL, other.Secret, checked)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_sandbox", map[string]any{"sandbox": sb.ID}},
		{"run_command", map[string]any{"sandbox": sb.ID, "command": "true"}},
		{"read_file", map[string]any{"sandbox": sb.ID, "path": "greeting"}},
		{"delete_sandbox", map[string]any{"sandbox": sb.ID}},
	} {
		if res := callTool(t, ctx, stranger, c.tool, c.args, nil); !res.IsError || !strings.Contains(toolText(res), "404") {
			t.Errorf("%s by another org: %s", c.tool, toolText(res))
		}
	}
	var list struct{ Sandboxes []any }
	if res := callTool(t, ctx, stranger, "list_sandboxes", map[string]any{}, &list); res.IsError || len(list.Sandboxes) != 0 {
		t.Errorf("list_sandboxes by another org: %s", toolText(res))
	}

	if res := callTool(t, ctx, cs, "delete_sandbox", map[string]any{"sandbox": sb.ID}, &sb); res.IsError || sb.State != "killed" {
		t.Fatalf("delete_sandbox: %s", toolText(res))
	}
}

// Without a valid key the endpoint is a 401 before any MCP; a request the
// MCP library refuses is answered in the API's error envelope.
func TestMCPEndpointRefusals(t *testing.T) {
	s := agenttest.Serve(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, c := range []struct {
		name, key, accept, ctype string
		status                   int
		detail                   string
	}{
		{"no key", "", "application/json, text/event-stream", "application/json", 401, "API key is required"},
		{"bad key", "sbx_nope", "application/json, text/event-stream", "application/json", 401, ""},
		{"not JSON", s.Key, "application/json, text/event-stream", "text/plain", 415, "application/json"},
		{"wrong Accept", s.Key, "application/json", "application/json", 400, "Accept"},
	} {
		req, _ := http.NewRequest("POST", s.URL+"/api/v1/mcp", strings.NewReader(init))
		req.Header.Set("Accept", c.accept)
		req.Header.Set("Content-Type", c.ctype)
		if c.key != "" {
			req.Header.Set("X-API-Key", c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Code   int
			Detail string
		}
		if resp.StatusCode != c.status || json.Unmarshal(data, &e) != nil || e.Code != c.status || !strings.Contains(e.Detail, c.detail) {
			t.Errorf("%s: %d %s", c.name, resp.StatusCode, data)
		}
	}
	// Stateless: one POST is a whole exchange, with no initialize first.
	req, _ := http.NewRequest("POST", s.URL+"/api/v1/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+s.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Result struct{ Tools []struct{ Name string } }
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || len(list.Result.Tools) != 14 {
		t.Errorf("tools/list alone: %d, %v, %+v", resp.StatusCode, err, list)
	}
	resp, err = http.Get(s.URL + "/api/v1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
