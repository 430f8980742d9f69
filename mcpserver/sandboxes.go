package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// addSandboxes registers the lifecycle tools: create, list, get, pause,
// resume and delete.
func (t tools) addSandboxes(s *mcp.Server) {
	add(s, "create_sandbox", "Create a sandbox",
		"Create a sandbox from a template (or a snapshot) and wait until it runs. Answers its id, which the other tools take.", false, t.create)
	add(s, "list_sandboxes", "List sandboxes",
		"List the sandboxes this API key reaches, newest first, optionally only those in some states.", true, t.list)
	add(s, "get_sandbox", "Get a sandbox", "A sandbox's state, template, sizes, times and metadata.", true, t.get)
	add(s, "pause_sandbox", "Pause a sandbox",
		"Pause a running sandbox: its memory, processes and files are kept, and it costs no compute until resumed.", false, t.pause)
	add(s, "resume_sandbox", "Resume a sandbox", "Resume a paused sandbox, optionally with a new timeout.", false, t.resume)
	add(s, "delete_sandbox", "Delete a sandbox", "Kill a sandbox; its processes and files are gone.", false, t.delete)
}

// Sandbox is what the tools say of a sandbox.
type Sandbox struct {
	ID          string            `json:"id" jsonschema:"the sbx UUID"`
	SandboxID   string            `json:"sandbox_id" jsonschema:"the provider sandbox ID; either names the sandbox"`
	Template    string            `json:"template"`
	State       string            `json:"state" jsonschema:"starting, running, paused, killed or failed"`
	PauseReason string            `json:"pause_reason,omitempty"`
	EndReason   string            `json:"end_reason,omitempty"`
	Diagnostic  string            `json:"diagnostic,omitempty" jsonschema:"why it failed, when it did"`
	CPU         float64           `json:"cpu"`
	MemoryMB    int64             `json:"memory_mb"`
	CreatedAt   string            `json:"created_at" jsonschema:"RFC 3339"`
	ExpiresAt   string            `json:"expires_at,omitempty" jsonschema:"RFC 3339: when it is killed (or paused) unless kept alive"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	ForkedFrom  string            `json:"forked_from,omitempty" jsonschema:"the id of the sandbox it was forked from"`
}

// sandbox is the tools' view of an API sandbox.
func sandbox(sb *apiv1.Sandbox) Sandbox {
	out := Sandbox{ID: sb.ID, SandboxID: sb.SandboxID, Template: sb.TemplateID, State: sb.State, PauseReason: sb.PauseReason,
		EndReason: sb.EndReason, Diagnostic: sb.Diagnostic, CPU: sb.CPU, MemoryMB: sb.MemoryMB,
		CreatedAt: sb.CreatedAt.UTC().Format(time.RFC3339), Metadata: sb.Metadata, ForkedFrom: sb.ForkedFrom}
	if sb.ExpiresAt != nil {
		out.ExpiresAt = sb.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return out
}

// String is a sandbox in one line.
func (s Sandbox) String() string {
	b := fmt.Sprintf("sandbox %s (id %s): %s, template %s", s.SandboxID, s.ID, s.State, s.Template)
	switch {
	case s.Diagnostic != "":
		b += ", " + s.Diagnostic
	case s.PauseReason != "":
		b += ", paused by " + s.PauseReason
	case s.EndReason != "":
		b += ", ended by " + s.EndReason
	}
	if s.ExpiresAt != "" && (s.State == "running" || s.State == "starting") {
		b += ", expires " + s.ExpiresAt
	}
	return b
}

// CreateInput is create_sandbox's input.
type CreateInput struct {
	Template       string            `json:"template,omitempty" jsonschema:"the template to start from, e.g. base; leave out with snapshot_id"`
	SnapshotID     string            `json:"snapshot_id,omitempty" jsonschema:"start from this snapshot (its memory, processes and files) in place of a template"`
	TimeoutSeconds int64             `json:"timeout_seconds,omitempty" jsonschema:"lifetime in seconds before it is killed; the server's default when left out"`
	CPU            float64           `json:"cpu,omitempty" jsonschema:"vCPUs; the template's default when left out"`
	MemoryMB       int64             `json:"memory_mb,omitempty" jsonschema:"memory in MiB; the template's default when left out"`
	EnvVars        map[string]string `json:"env_vars,omitempty" jsonschema:"environment variables of its processes; never stored or shown"`
	Metadata       map[string]string `json:"metadata,omitempty" jsonschema:"labels to find it by"`
}

func (t tools) create(ctx context.Context, in CreateInput) (*mcp.CallToolResult, Sandbox, error) {
	timeout, err := seconds("timeout_seconds", in.TimeoutSeconds)
	if err != nil {
		return failed[Sandbox]("create_sandbox", err)
	}
	sb, err := t.c.Create(ctx, in.Template, &client.CreateOptions{WaitReady: true, SnapshotID: in.SnapshotID, Timeout: timeout, CPU: in.CPU, MemoryMB: in.MemoryMB, EnvVars: in.EnvVars, Metadata: in.Metadata})
	if err != nil {
		return failed[Sandbox]("create_sandbox", err)
	}
	data := sb.Data()
	out := sandbox(&data)
	return result(out, "created %s", out)
}

// ListInput is list_sandboxes' input.
type ListInput struct {
	States   []string          `json:"states,omitempty" jsonschema:"only sandboxes in these states: starting, running, paused, killed, failed"`
	Template string            `json:"template,omitempty" jsonschema:"only sandboxes of this template"`
	Metadata map[string]string `json:"metadata,omitempty" jsonschema:"only sandboxes whose metadata has each of these pairs"`
	Limit    int               `json:"limit,omitempty" jsonschema:"page size, 1 to 1000 (default 100)"`
	Cursor   string            `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

// SandboxList is list_sandboxes' output.
type SandboxList struct {
	Sandboxes  []Sandbox `json:"sandboxes"`
	NextCursor string    `json:"next_cursor,omitempty" jsonschema:"more follow: pass it as cursor"`
}

func (t tools) list(ctx context.Context, in ListInput) (*mcp.CallToolResult, SandboxList, error) {
	if in.Limit < 0 {
		return failed[SandboxList]("list_sandboxes", fmt.Errorf("limit is %d: give 1 to 1000, or leave it out for 100", in.Limit))
	}
	page, err := t.c.List(ctx, client.ListOptions{States: in.States, Template: in.Template, Metadata: in.Metadata, Limit: in.Limit, Cursor: in.Cursor})
	if err != nil {
		return failed[SandboxList]("list_sandboxes", err)
	}
	out := SandboxList{Sandboxes: []Sandbox{}, NextCursor: page.NextCursor}
	lines := []string{fmt.Sprintf("%d sandboxes", len(page.Items))}
	for i := range page.Items {
		sb := sandbox(&page.Items[i])
		out.Sandboxes = append(out.Sandboxes, sb)
		lines = append(lines, sb.String())
	}
	if page.NextCursor != "" {
		lines = append(lines, "more follow: cursor "+page.NextCursor)
	}
	return result(out, "%s", strings.Join(lines, "\n"))
}

func (t tools) get(ctx context.Context, in SandboxRef) (*mcp.CallToolResult, Sandbox, error) {
	return t.act("get_sandbox", "", func() (*apiv1.Sandbox, error) { return t.c.Get(ctx, in.Sandbox) })
}

func (t tools) pause(ctx context.Context, in SandboxRef) (*mcp.CallToolResult, Sandbox, error) {
	return t.act("pause_sandbox", "paused ", func() (*apiv1.Sandbox, error) { return t.c.Pause(ctx, in.Sandbox) })
}

// ResumeInput is resume_sandbox's input.
type ResumeInput struct {
	SandboxRef
	TimeoutSeconds int64 `json:"timeout_seconds,omitempty" jsonschema:"new lifetime in seconds from now; its own timeout when left out"`
}

func (t tools) resume(ctx context.Context, in ResumeInput) (*mcp.CallToolResult, Sandbox, error) {
	timeout, err := seconds("timeout_seconds", in.TimeoutSeconds)
	if err != nil {
		return failed[Sandbox]("resume_sandbox", err)
	}
	return t.act("resume_sandbox", "resumed ", func() (*apiv1.Sandbox, error) { return t.c.Resume(ctx, in.Sandbox, timeout) })
}

func (t tools) delete(ctx context.Context, in SandboxRef) (*mcp.CallToolResult, Sandbox, error) {
	return t.act("delete_sandbox", "deleted ", func() (*apiv1.Sandbox, error) { return t.c.Delete(ctx, in.Sandbox) })
}

// act answers a call that answers a sandbox.
func (t tools) act(name, done string, call func() (*apiv1.Sandbox, error)) (*mcp.CallToolResult, Sandbox, error) {
	sb, err := call()
	if err != nil {
		return failed[Sandbox](name, err)
	}
	out := sandbox(sb)
	return result(out, "%s%s", done, out)
}
