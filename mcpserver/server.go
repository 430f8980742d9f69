// Package mcpserver is sbx's Model Context Protocol server: the tools an AI
// agent drives sandboxes with (create, list, get, pause, resume and delete
// them; run a command or code; read, write and list files; make a preview
// URL; snapshot and fork), over sbx's public Go client.
//
// Every tool is one or two calls of package client, so the API does all
// validation and authorization: a server acts as the API key its client
// holds, and an answer the API refuses becomes a tool error whose text is
// the API's detail. Results are a short text for the model and the same
// facts as structured content. `sbx mcp` serves it over stdio; serve
// serves it over streamable HTTP at /api/v1/mcp, one server per request,
// with the request's key.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/version"
)

// Name is the server's name in the MCP handshake.
const Name = "sbx"

// instructions tell the model how the tools fit together.
const instructions = `sbx runs isolated Linux sandboxes. Create one with create_sandbox (it answers once the sandbox runs), then use its id (or sandbox_id) with the other tools: run_command runs a shell command line, run_code runs Python (or bash) in a stateful interpreter, read_file, write_file and list_files work on its files, create_preview_url shares a port it serves. Pause a sandbox you will come back to, delete it when done.`

// schemas caches the tools' schemas between servers: serve makes one
// server per HTTP request.
var schemas = mcp.NewSchemaCache()

// New returns a server whose tools act through c, as c's API key.
func New(c *client.Client) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "sbx sandboxes", Version: version.Get().Version},
		&mcp.ServerOptions{Instructions: instructions, SchemaCache: schemas})
	t := tools{c: c}
	t.addSandboxes(s)
	t.addExec(s)
	t.addFiles(s)
	t.addSharing(s)
	return s
}

// tools holds what every tool calls.
type tools struct{ c *client.Client }

// SandboxRef names the sandbox a tool acts on.
type SandboxRef struct {
	Sandbox string `json:"sandbox" jsonschema:"the sandbox: its id (sbx UUID) or its sandbox_id"`
}

// refused is a tool's error for a failed call: the API's own detail, with
// the fields it names, so that the model can correct its input.
func refused(what string, err error) error {
	var apiErr *apiv1.Error
	if !errors.As(err, &apiErr) {
		return fmt.Errorf("%s: %w", what, err)
	}
	msg := fmt.Sprintf("%s: %s (%d %s)", what, apiErr.Detail, apiErr.Code, apiErr.Type)
	var fields []string
	for _, f := range apiErr.Errors {
		fields = append(fields, f.Field+": "+f.Message)
	}
	if len(fields) > 0 {
		msg += "; " + strings.Join(fields, "; ")
	}
	return errors.New(msg)
}

// result is a tool's answer: text for the model, out as structured content.
func result[T any](out T, format string, args ...any) (*mcp.CallToolResult, T, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}, out, nil
}

// failed is a tool's answer to a failed call.
func failed[T any](what string, err error) (*mcp.CallToolResult, T, error) {
	var zero T
	return nil, zero, refused(what, err)
}

// add registers a tool; a readOnly one changes nothing.
func add[In, Out any](s *mcp.Server, name, title, description string, readOnly bool, h func(context.Context, In) (*mcp.CallToolResult, Out, error)) {
	mcp.AddTool(s, &mcp.Tool{Name: name, Title: title, Description: description, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			return h(ctx, in)
		})
}

// seconds is a tool's count of seconds as a duration. The client leaves
// out a duration that is not positive, for the server's default, so a
// negative one is refused here rather than taken for "the default".
func seconds(field string, n int64) (time.Duration, error) {
	if n < 0 {
		return 0, fmt.Errorf("%s is %d: give a number of seconds, or leave it out for the default", field, n)
	}
	return time.Duration(n) * time.Second, nil
}
