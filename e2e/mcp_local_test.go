package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// An agent's session through sbx's MCP tools on gVisor sandboxes, with the
// official MCP Go SDK's client: over stdio to the built `sbx mcp`, and
// over streamable HTTP to serve's /api/v1/mcp, each lists the tools and
// runs create → run a command → write and read a file → snapshot → fork
// → delete; another org's key reaches nothing of it.
func TestMCPLocal(t *testing.T) {
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a hang guard
	defer cancel()
	httpSession, err := s.mcpHTTP(ctx, s.key)
	if err != nil {
		t.Fatal(err)
	}
	var other apiv1.CreatedOrg
	s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "other", "kyc_status": "verified", "credits": "100"}, http.StatusCreated, &other)
	for name, cs := range map[string]*mcp.ClientSession{"stdio": s.mcpStdio(ctx, s.key), "http": httpSession} {
		t.Run(name, func(t *testing.T) {
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 14 {
				t.Fatalf("tools: %+v, %v", tools, err)
			}
			var sb mcpSandbox
			tool(t, ctx, cs, "create_sandbox", map[string]any{"template": "base", "timeout_seconds": 600}, &sb, false)
			if sb.State != "running" {
				t.Fatalf("created %+v", sb)
			}
			var run struct {
				ExitCode int    `json:"exit_code"`
				Stdout   string `json:"stdout"`
			}
			tool(t, ctx, cs, "run_command", map[string]any{"sandbox": sb.ID, "command": "uname -s > /tmp/os; cat /tmp/os; id -un"}, &run, false)
			if run.ExitCode != 0 || !strings.HasPrefix(run.Stdout, "Linux\n") {
				t.Fatalf("run_command: %+v", run)
			}
			tool(t, ctx, cs, "write_file", map[string]any{"sandbox": sb.ID, "path": "notes/todo.txt", "content": "ship it\n"}, nil, false)
			if text := tool(t, ctx, cs, "read_file", map[string]any{"sandbox": sb.ID, "path": "/tmp/os"}, nil, false); text != "Linux\n" {
				t.Fatalf("read_file /tmp/os: %q", text)
			}
			if text := tool(t, ctx, cs, "run_command", map[string]any{"sandbox": sb.ID, "command": "cat /workspace/notes/todo.txt"}, nil, false); !strings.Contains(text, "ship it") {
				t.Fatalf("the file written: %q", text)
			}
			var snap struct{ ID, State, Source string }
			if tool(t, ctx, cs, "snapshot_sandbox", map[string]any{"sandbox": sb.ID, "name": "mcp-" + name}, &snap, false); snap.State != "ready" || snap.Source != sb.ID {
				t.Fatalf("snapshot_sandbox: %+v", snap)
			}
			var forks struct{ Children []mcpSandbox }
			if tool(t, ctx, cs, "fork_sandbox", map[string]any{"sandbox": sb.ID}, &forks, false); len(forks.Children) != 1 || forks.Children[0].State != "running" {
				t.Fatalf("fork_sandbox: %+v", forks)
			}
			if text := tool(t, ctx, cs, "read_file", map[string]any{"sandbox": forks.Children[0].ID, "path": "/workspace/notes/todo.txt"}, nil, false); text != "ship it\n" {
				t.Fatalf("the fork's file: %q", text)
			}
			tool(t, ctx, cs, "delete_sandbox", map[string]any{"sandbox": forks.Children[0].ID}, nil, false)
			stranger := s.mcpStdio(ctx, other.Secret)
			if text := tool(t, ctx, stranger, "read_file", map[string]any{"sandbox": sb.ID, "path": "/tmp/os"}, nil, true); !strings.Contains(text, "404") {
				t.Errorf("read_file by another org: %q", text)
			}
			if tool(t, ctx, cs, "delete_sandbox", map[string]any{"sandbox": sb.ID}, &sb, false); sb.State != "killed" {
				t.Fatalf("deleted: %+v", sb)
			}
		})
	}
}

// run_code through the MCP endpoint on the code interpreter: state kept
// between runs, the last expression's value, an error's name.
func TestMCPRunCodeLocal(t *testing.T) {
	if _, err := testtemplates.Catalog("code-interpreter"); err != nil {
		t.Fatal(err)
	}
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a hang guard
	defer cancel()
	cs, err := s.mcpHTTP(ctx, s.key)
	if err != nil {
		t.Fatal(err)
	}
	var sb mcpSandbox
	tool(t, ctx, cs, "create_sandbox", map[string]any{"template": "code-interpreter", "memory_mb": 1024}, &sb, false)
	var out struct {
		Status string
		Text   string
		Error  *struct{ Name string }
	}
	tool(t, ctx, cs, "run_code", map[string]any{"sandbox": sb.ID, "code": "x = 41"}, &out, false)
	if tool(t, ctx, cs, "run_code", map[string]any{"sandbox": sb.ID, "code": "x + 1"}, &out, false); out.Status != "ok" || out.Text != "42" {
		t.Fatalf("x + 1: %+v", out)
	}
	if tool(t, ctx, cs, "run_code", map[string]any{"sandbox": sb.ID, "code": "1/0"}, &out, false); out.Status != "error" || out.Error == nil || out.Error.Name != "ZeroDivisionError" {
		t.Fatalf("1/0: %+v", out)
	}
	tool(t, ctx, cs, "delete_sandbox", map[string]any{"sandbox": sb.ID}, nil, false)
}
