package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/agenttest"
	"github.com/sbxdev/sbx/mcpserver"
)

// connect serves mcpserver over c to an MCP client session, in memory.
func connect(t *testing.T, ctx context.Context, c *client.Client) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(c).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool that must succeed, decoding its structured content
// into out (when not nil), and answers its text.
func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := texts(res)
	if res.IsError {
		t.Fatalf("%s: a tool error: %s", name, text)
	}
	if out != nil {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, data, err)
		}
	}
	return text
}

// refused calls a tool that must fail with a tool error, and answers its text.
func refused(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded: %s", name, args, texts(res))
	}
	return texts(res)
}

func texts(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestToolsList(t *testing.T) {
	s := agenttest.Serve(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard
	defer cancel()
	cs := connect(t, ctx, client.New(client.Options{URL: s.URL, APIKey: s.Key}))
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil {
			t.Errorf("tool %s lacks a description or a schema", tool.Name)
		}
	}
	slices.Sort(names)
	want := []string{"create_preview_url", "create_sandbox", "delete_sandbox", "fork_sandbox", "get_sandbox", "list_files", "list_sandboxes",
		"pause_sandbox", "read_file", "resume_sandbox", "run_code", "run_command", "snapshot_sandbox", "write_file"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
}

// A sandbox's life through the tools, against serve's API over real agents.
func TestSandboxThroughTools(t *testing.T) {
	s := agenttest.Serve(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a hang guard
	defer cancel()
	cs := connect(t, ctx, client.New(client.Options{URL: s.URL, APIKey: s.Key}))

	var sb mcpserver.Sandbox
	text := call(t, ctx, cs, "create_sandbox", map[string]any{"template": "base", "metadata": map[string]string{"by": "mcp"}}, &sb)
	if sb.State != "running" || sb.ID == "" || sb.Metadata["by"] != "mcp" || !strings.Contains(text, sb.SandboxID) {
		t.Fatalf("created %+v, said %q", sb, text)
	}
	ref := sb.ID

	var cmd mcpserver.CommandOutput
	text = call(t, ctx, cs, "run_command", map[string]any{"sandbox": ref, "command": "echo out; echo err >&2; exit 3"}, &cmd)
	if cmd.ExitCode != 3 || cmd.Stdout != "out\n" || cmd.Stderr != "err\n" || !strings.Contains(text, "exit code 3") || !strings.Contains(text, "out") {
		t.Fatalf("run_command: %+v, said %q", cmd, text)
	}

	var written mcpserver.Entry
	call(t, ctx, cs, "write_file", map[string]any{"sandbox": sb.SandboxID, "path": "notes/hello.txt", "content": "héllo\n"}, &written)
	if written.Size != int64(len("héllo\n")) || !strings.HasSuffix(written.Path, "/notes/hello.txt") {
		t.Fatalf("write_file: %+v", written)
	}
	var file mcpserver.FileContent
	text = call(t, ctx, cs, "read_file", map[string]any{"sandbox": ref, "path": written.Path}, &file)
	if file.Content != "héllo\n" || file.Encoding != "utf-8" || text != "héllo\n" {
		t.Fatalf("read_file: %+v, said %q", file, text)
	}
	call(t, ctx, cs, "write_file", map[string]any{"sandbox": ref, "path": "bin.dat", "content": "AP8=", "encoding": "base64"}, nil)
	call(t, ctx, cs, "read_file", map[string]any{"sandbox": ref, "path": "bin.dat"}, &file)
	if file.Encoding != "base64" || file.Content != "AP8=" || file.Size != 2 {
		t.Fatalf("read_file of bytes: %+v", file)
	}
	var dir mcpserver.EntryList
	call(t, ctx, cs, "list_files", map[string]any{"sandbox": ref, "path": "notes"}, &dir)
	if len(dir.Entries) != 1 || dir.Entries[0].Path != written.Path || dir.Entries[0].Type != "file" {
		t.Fatalf("list_files: %+v", dir)
	}

	var list mcpserver.SandboxList
	call(t, ctx, cs, "list_sandboxes", map[string]any{"states": []string{"running"}}, &list)
	if len(list.Sandboxes) != 1 || list.Sandboxes[0].ID != ref {
		t.Fatalf("list_sandboxes: %+v", list)
	}
	var preview mcpserver.Preview
	call(t, ctx, cs, "create_preview_url", map[string]any{"sandbox": ref, "port": 8080, "ttl_seconds": 600}, &preview)
	if preview.Port != 8080 || !strings.Contains(preview.URL, "8080") {
		t.Fatalf("create_preview_url: %+v", preview)
	}

	call(t, ctx, cs, "pause_sandbox", map[string]any{"sandbox": ref}, &sb)
	if sb.State != "paused" {
		t.Fatalf("paused: %+v", sb)
	}
	call(t, ctx, cs, "resume_sandbox", map[string]any{"sandbox": ref}, &sb)
	if sb.State != "running" {
		t.Fatalf("resumed: %+v", sb)
	}
	call(t, ctx, cs, "get_sandbox", map[string]any{"sandbox": ref}, &sb)
	if sb.State != "running" {
		t.Fatalf("got: %+v", sb)
	}
	call(t, ctx, cs, "delete_sandbox", map[string]any{"sandbox": ref}, &sb)
	if sb.State != "killed" {
		t.Fatalf("deleted: %+v", sb)
	}
	if text := refused(t, ctx, cs, "run_command", map[string]any{"sandbox": ref, "command": "true"}); !strings.Contains(text, "run_command: ") {
		t.Fatalf("run_command in a killed sandbox: %q", text)
	}
}

// Inputs are checked against the tools' schemas, and what the API refuses
// comes back as a tool error naming the problem.
func TestToolErrors(t *testing.T) {
	s := agenttest.Serve(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard
	defer cancel()
	cs := connect(t, ctx, client.New(client.Options{URL: s.URL, APIKey: s.Key}))
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"get_sandbox", map[string]any{}, "sandbox"},                                // required
		{"get_sandbox", map[string]any{"sandbox": "x", "extra": 1}, "extra"},        // unknown
		{"run_command", map[string]any{"sandbox": 7, "command": "true"}, "sandbox"}, // a number
		{"get_sandbox", map[string]any{"sandbox": "sbx-nosuch"}, "get_sandbox: "},   // the API's 404
		{"create_sandbox", map[string]any{"template": "base", "cpu": -1}, "cpu"},    // the API's 400
		{"create_sandbox", map[string]any{"timeout_seconds": -5, "template": "base"}, "timeout"},
		{"write_file", map[string]any{"sandbox": "x", "path": "a", "content": "!", "encoding": "hex"}, `encoding "hex"`},
		{"list_sandboxes", map[string]any{"states": []string{"asleep"}}, "asleep"},
	} {
		if text := refused(t, ctx, cs, c.tool, c.args); !strings.Contains(text, c.want) {
			t.Errorf("%s(%v): %q does not name %q", c.tool, c.args, text, c.want)
		}
	}
	// A key that is not one reaches nothing.
	bad := connect(t, ctx, client.New(client.Options{URL: s.URL, APIKey: "sbx_not_a_key"}))
	if text := refused(t, ctx, bad, "list_sandboxes", map[string]any{}); !strings.Contains(text, "401") {
		t.Errorf("list_sandboxes with a bad key: %q", text)
	}
}
