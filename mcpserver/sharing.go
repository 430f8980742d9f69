package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/client"
)

// addSharing registers the tools that make something of a sandbox for
// later or for others: a preview URL, a snapshot, forks.
func (t tools) addSharing(s *mcp.Server) {
	add(s, "create_preview_url", "Make a preview URL",
		"Make a URL to a port the sandbox serves (a web app, say) that works without other credentials until it expires.", false, t.preview)
	add(s, "snapshot_sandbox", "Snapshot a sandbox",
		"Capture a sandbox (its memory, processes and files, or only its files), which goes on as it was; create_sandbox with snapshot_id starts a new one from it.", false, t.snapshot)
	add(s, "fork_sandbox", "Fork a sandbox",
		"Make running copies of a sandbox, each with its memory, processes and files.", false, t.fork)
}

// PreviewInput is create_preview_url's input.
type PreviewInput struct {
	SandboxRef
	Port       int   `json:"port" jsonschema:"the port the sandbox serves"`
	TTLSeconds int64 `json:"ttl_seconds,omitempty" jsonschema:"how long the URL works, in seconds (default an hour)"`
}

// Preview is create_preview_url's output.
type Preview struct {
	URL       string `json:"url" jsonschema:"the URL, with its token"`
	Port      int    `json:"port"`
	ExpiresAt string `json:"expires_at" jsonschema:"RFC 3339"`
}

func (t tools) preview(ctx context.Context, in PreviewInput) (*mcp.CallToolResult, Preview, error) {
	ttl, err := seconds("ttl_seconds", in.TTLSeconds)
	if err != nil {
		return failed[Preview]("create_preview_url", err)
	}
	link, err := t.c.CreatePreviewLink(ctx, in.Sandbox, in.Port, ttl)
	if err != nil {
		return failed[Preview]("create_preview_url", err)
	}
	out := Preview{URL: link.URL, Port: link.Port, ExpiresAt: link.ExpiresAt.UTC().Format(time.RFC3339)}
	return result(out, "%s (port %d, until %s)", out.URL, out.Port, out.ExpiresAt)
}

// SnapshotInput is snapshot_sandbox's input.
type SnapshotInput struct {
	SandboxRef
	Name      string `json:"name,omitempty" jsonschema:"a name for it"`
	FilesOnly bool   `json:"files_only,omitempty" jsonschema:"capture only its files, without memory and processes"`
}

// Snapshot is snapshot_sandbox's output.
type Snapshot struct {
	ID        string `json:"id" jsonschema:"the snapshot's ID, create_sandbox's snapshot_id"`
	Name      string `json:"name,omitempty"`
	State     string `json:"state" jsonschema:"creating, ready, failed or deleted"`
	Memory    bool   `json:"memory" jsonschema:"holds memory and processes, not only files"`
	SizeBytes int64  `json:"size_bytes"`
	Source    string `json:"source" jsonschema:"the id of the sandbox it captured"`
}

func (t tools) snapshot(ctx context.Context, in SnapshotInput) (*mcp.CallToolResult, Snapshot, error) {
	snap, err := t.c.Snapshot(ctx, in.Sandbox, &client.SnapshotOptions{Name: in.Name, FilesOnly: in.FilesOnly})
	if err != nil {
		return failed[Snapshot]("snapshot_sandbox", err)
	}
	out := Snapshot{ID: snap.ID, Name: snap.Name, State: snap.State, Memory: snap.Memory, SizeBytes: snap.SizeBytes, Source: snap.SourceSandboxID}
	what := "files, memory and processes"
	if !out.Memory {
		what = "files"
	}
	return result(out, "snapshot %s of sandbox %s: %s, %s, %d bytes", out.ID, out.Source, out.State, what, out.SizeBytes)
}

// ForkInput is fork_sandbox's input.
type ForkInput struct {
	SandboxRef
	Count int `json:"count,omitempty" jsonschema:"how many copies (default 1)"`
}

// Forks is fork_sandbox's output.
type Forks struct {
	Children []Sandbox `json:"children"`
	Errors   []string  `json:"errors,omitempty" jsonschema:"why each copy that could not be made was not"`
}

func (t tools) fork(ctx context.Context, in ForkInput) (*mcp.CallToolResult, Forks, error) {
	res, err := t.c.Fork(ctx, in.Sandbox, in.Count)
	if err != nil {
		return failed[Forks]("fork_sandbox", err)
	}
	out := Forks{Children: []Sandbox{}, Errors: res.Errors}
	lines := []string{fmt.Sprintf("%d forks made", len(res.Children))}
	for i := range res.Children {
		sb := sandbox(&res.Children[i])
		out.Children = append(out.Children, sb)
		lines = append(lines, sb.String())
	}
	for _, e := range res.Errors {
		lines = append(lines, "not made: "+e)
	}
	return result(out, "%s", strings.Join(lines, "\n"))
}
