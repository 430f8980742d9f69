package mcpserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/apiv1"
)

// maxRead is the largest file read_file answers; a larger one is for
// run_command (head, tail, grep) to look into.
const maxRead = 1 << 20

// addFiles registers read_file, write_file and list_files.
func (t tools) addFiles(s *mcp.Server) {
	add(s, "read_file", "Read a file",
		"Read a file of a sandbox (up to 1 MiB): as text when it is UTF-8, else base64.", true, t.read)
	add(s, "write_file", "Write a file",
		"Write a file in a sandbox, making its directories; replaces what was there.", false, t.write)
	add(s, "list_files", "List files", "List a directory of a sandbox.", true, t.listFiles)
}

// Entry is a file or directory.
type Entry struct {
	Path   string `json:"path"`
	Type   string `json:"type" jsonschema:"file, dir, symlink or other"`
	Size   int64  `json:"size"`
	Mode   string `json:"mode" jsonschema:"permissions in octal"`
	Target string `json:"target,omitempty" jsonschema:"a symlink's target"`
}

func entry(e apiv1.EntryInfo) Entry {
	return Entry{Path: e.Path, Type: e.Type, Size: e.Size, Mode: e.Mode, Target: e.Target}
}

// PathInput names a file of a sandbox.
type PathInput struct {
	SandboxRef
	Path string `json:"path" jsonschema:"an absolute path, or one relative to /workspace"`
}

// FileContent is read_file's output.
type FileContent struct {
	Path     string `json:"path"`
	Size     int    `json:"size"`
	Encoding string `json:"encoding" jsonschema:"utf-8 or base64"`
	Content  string `json:"content"`
}

func (t tools) read(ctx context.Context, in PathInput) (*mcp.CallToolResult, FileContent, error) {
	r, err := t.c.Files(in.Sandbox).Read(ctx, in.Path)
	if err != nil {
		return failed[FileContent]("read_file", err)
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxRead+1))
	if err != nil {
		return failed[FileContent]("read_file", err)
	}
	if len(data) > maxRead {
		return failed[FileContent]("read_file", fmt.Errorf("%s is larger than %d bytes, the most read_file answers; look into it with run_command (head, tail, grep)", in.Path, maxRead))
	}
	out := FileContent{Path: in.Path, Size: len(data), Encoding: "utf-8", Content: string(data)}
	if !utf8.Valid(data) {
		out.Encoding, out.Content = "base64", base64.StdEncoding.EncodeToString(data)
	}
	if out.Encoding == "base64" {
		return result(out, "%s: %d bytes, not UTF-8, as base64:\n%s", in.Path, out.Size, out.Content)
	}
	return result(out, "%s", out.Content)
}

// WriteInput is write_file's input.
type WriteInput struct {
	PathInput
	Content  string `json:"content" jsonschema:"what the file holds"`
	Encoding string `json:"encoding,omitempty" jsonschema:"how content is written: utf-8 (default) or base64"`
}

func (t tools) write(ctx context.Context, in WriteInput) (*mcp.CallToolResult, Entry, error) {
	data := []byte(in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return failed[Entry]("write_file", fmt.Errorf("content is not base64: %v", err))
		}
	default:
		return failed[Entry]("write_file", fmt.Errorf("encoding %q is not utf-8 or base64", in.Encoding))
	}
	info, err := t.c.Files(in.Sandbox).Write(ctx, in.Path, bytes.NewReader(data))
	if err != nil {
		return failed[Entry]("write_file", err)
	}
	out := entry(*info)
	return result(out, "wrote %s (%d bytes)", out.Path, out.Size)
}

// ListFilesInput is list_files' input.
type ListFilesInput struct {
	PathInput
	Depth int `json:"depth,omitempty" jsonschema:"how deep to list: 1 (default) is the directory's own entries"`
}

// EntryList is list_files' output.
type EntryList struct {
	Entries []Entry `json:"entries"`
}

func (t tools) listFiles(ctx context.Context, in ListFilesInput) (*mcp.CallToolResult, EntryList, error) {
	if in.Depth < 0 {
		return failed[EntryList]("list_files", fmt.Errorf("depth %d is not 1 or more", in.Depth))
	}
	items, err := t.c.Files(in.Sandbox).List(ctx, in.Path, in.Depth)
	if err != nil {
		return failed[EntryList]("list_files", err)
	}
	out := EntryList{Entries: []Entry{}}
	lines := []string{fmt.Sprintf("%d entries in %s", len(items), in.Path)}
	for _, e := range items {
		out.Entries = append(out.Entries, entry(e))
		line := fmt.Sprintf("%s %s %d", e.Type, e.Path, e.Size)
		if e.Target != "" {
			line += " -> " + e.Target
		}
		lines = append(lines, line)
	}
	return result(out, "%s", strings.Join(lines, "\n"))
}
