package mcpserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/sbxdev/sbx/client"
)

// maxOutput is how much of a stream (a command's stdout, say) a result
// carries: its last maxOutput bytes, which is where errors and summaries
// are, with a note of how much was cut.
const maxOutput = 64 << 10

// addExec registers run_command and run_code.
func (t tools) addExec(s *mcp.Server) {
	add(s, "run_command", "Run a command",
		"Run a shell command line (bash -l -c) in a sandbox and wait for it to end; answers its exit code and output (the last 64 KiB of each stream).", false, t.runCommand)
	add(s, "run_code", "Run code",
		"Run code in a sandbox's code interpreter (a Jupyter kernel: variables and imports persist between runs of a context) and wait for it to end; answers its output, the value of its last expression and its error.", false, t.runCode)
}

// CommandInput is run_command's input.
type CommandInput struct {
	SandboxRef
	Command        string            `json:"command" jsonschema:"the command line, run with bash -l -c"`
	Cwd            string            `json:"cwd,omitempty" jsonschema:"its working directory (default /workspace)"`
	Env            map[string]string `json:"env,omitempty" jsonschema:"environment variables added to the sandbox's"`
	User           string            `json:"user,omitempty" jsonschema:"a user name or UID (default the template's user)"`
	TimeoutSeconds int64             `json:"timeout_seconds,omitempty" jsonschema:"kill it after this many seconds; no limit when left out"`
}

// CommandOutput is run_command's output.
type CommandOutput struct {
	ExitCode int    `json:"exit_code" jsonschema:"-1 when a signal killed it"`
	Signal   string `json:"signal,omitempty" jsonschema:"the signal that killed it"`
	Error    string `json:"error,omitempty" jsonschema:"why it ended other than by exiting, e.g. a timeout"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

func (t tools) runCommand(ctx context.Context, in CommandInput) (*mcp.CallToolResult, CommandOutput, error) {
	timeout, err := seconds("timeout_seconds", in.TimeoutSeconds)
	if err != nil {
		return failed[CommandOutput]("run_command", err)
	}
	res, err := t.c.Commands(in.Sandbox).Run(ctx, in.Command, &client.CommandOptions{Cwd: in.Cwd, Env: in.Env, User: in.User, Timeout: timeout})
	if err != nil {
		return failed[CommandOutput]("run_command", err)
	}
	out := CommandOutput{ExitCode: res.ExitCode, Signal: res.Signal, Error: res.Error, Stdout: tail(res.Stdout), Stderr: tail(res.Stderr)}
	end := fmt.Sprintf("exit code %d", out.ExitCode)
	if out.Signal != "" {
		end += ", killed by " + out.Signal
	}
	if out.Error != "" {
		end += ", " + out.Error
	}
	return result(out, "%s%s%s", end, section("stdout", out.Stdout), section("stderr", out.Stderr))
}

// CodeInput is run_code's input.
type CodeInput struct {
	SandboxRef
	Code           string `json:"code" jsonschema:"the code to run"`
	Language       string `json:"language,omitempty" jsonschema:"python (default) or bash; leave out with context_id"`
	ContextID      string `json:"context_id,omitempty" jsonschema:"the code context to run in (default the language's default context)"`
	TimeoutSeconds int64  `json:"timeout_seconds,omitempty" jsonschema:"interrupt it after this many seconds (the context lives on); no limit when left out"`
}

// CodeOutput is run_code's output.
type CodeOutput struct {
	Status         string       `json:"status" jsonschema:"ok, error, interrupted or timeout"`
	Text           string       `json:"text,omitempty" jsonschema:"the value of the last expression, as text"`
	Stdout         string       `json:"stdout"`
	Stderr         string       `json:"stderr"`
	Results        []CodeResult `json:"results,omitempty" jsonschema:"what it displayed or returned, each with its MIME types"`
	Error          *CodeError   `json:"error,omitempty"`
	ContextID      string       `json:"context_id" jsonschema:"the context it ran in"`
	ExecutionCount int          `json:"execution_count"`
}

// CodeResult is one value code gave: its text and the MIME types it has
// (an image comes back as image content too).
type CodeResult struct {
	Text  string   `json:"text,omitempty"`
	Types []string `json:"types"`
	Main  bool     `json:"main,omitempty" jsonschema:"the value of the last expression"`
}

// CodeError is the error code raised.
type CodeError struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback,omitempty"`
}

func (t tools) runCode(ctx context.Context, in CodeInput) (*mcp.CallToolResult, CodeOutput, error) {
	timeout, err := seconds("timeout_seconds", in.TimeoutSeconds)
	if err != nil {
		return failed[CodeOutput]("run_code", err)
	}
	ex, err := t.c.Code(in.Sandbox).Run(ctx, in.Code, &client.CodeOptions{Language: in.Language, ContextID: in.ContextID, Timeout: timeout})
	if err != nil {
		return failed[CodeOutput]("run_code", err)
	}
	out := CodeOutput{Status: ex.End.Status, Text: ex.Text(), Stdout: tail(ex.Stdout), Stderr: tail(ex.Stderr),
		ContextID: ex.End.ContextID, ExecutionCount: ex.End.ExecutionCount}
	var images []mcp.Content
	for _, r := range ex.Results {
		cr := CodeResult{Main: r.IsMainResult, Types: []string{}}
		for typ, v := range r.Data {
			cr.Types = append(cr.Types, typ)
			if s, ok := v.(string); ok && typ == "image/png" {
				if data, err := base64.StdEncoding.DecodeString(s); err == nil {
					images = append(images, &mcp.ImageContent{MIMEType: typ, Data: data})
				}
			}
		}
		sort.Strings(cr.Types)
		cr.Text, _ = r.Data["text/plain"].(string)
		out.Results = append(out.Results, cr)
	}
	if ex.Error != nil {
		out.Error = &CodeError{Name: ex.Error.Name, Value: ex.Error.Value, Traceback: tail(strings.Join(ex.Error.Traceback, "\n"))}
	}
	text := "status " + out.Status
	if out.Text != "" {
		text += section("value", out.Text)
	}
	text += section("stdout", out.Stdout) + section("stderr", out.Stderr)
	if out.Error != nil {
		text += section("error", out.Error.Name+": "+out.Error.Value)
	}
	res, o, _ := result(out, "%s", text)
	res.Content = append(res.Content, images...)
	return res, o, nil
}

// tail is the last maxOutput bytes of s, saying how much came before.
func tail(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	cut := len(s) - maxOutput
	for cut < len(s) && s[cut]&0xC0 == 0x80 { // not in the middle of a UTF-8 sequence
		cut++
	}
	return fmt.Sprintf("[%d bytes cut]\n", cut) + s[cut:]
}

// section is a labelled block of a text result, or "" for an empty one.
func section(label, s string) string {
	if s == "" {
		return ""
	}
	return "\n--- " + label + " ---\n" + strings.TrimRight(s, "\n")
}
