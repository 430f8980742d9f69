package client

import (
	"context"
	"net/http"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/ndjson"
)

// Code runs code in a sandbox's code contexts: stateful interpreters
// (Jupyter kernels) whose variables, imports and directory persist between
// runs, as E2B's runCode does.
type Code struct{ sandboxAPI }

// Code is the code service of sandbox id.
func (c *Client) Code(id string) *Code { return &Code{sandboxAPI{c, id}} }

// CodeOptions are the optional parts of running code.
type CodeOptions struct {
	ContextID string        // the context to run in; default the language's default context
	Language  string        // without ContextID: python (default) or bash
	Timeout   time.Duration // the run is interrupted after this (the context lives on); 0: never

	// Each callback gets its events as they come, in order, from one
	// goroutine.
	OnStdout, OnStderr func(text string)
	OnResult           func(apiv1.CodeEvent)
	OnError            func(apiv1.CodeEvent)
}

// Execution is what a run gave: its output, results and error, and its end.
type Execution struct {
	Stdout, Stderr string
	Results        []apiv1.CodeEvent // each with its MIME bundle (Data); IsMainResult marks the last expression's value
	Error          *apiv1.CodeEvent  // the error it raised, if any
	End            apiv1.CodeEvent   // status, context, execution count, duration
}

// Text is the text/plain of the last expression's value, if any.
func (e *Execution) Text() string {
	for _, r := range e.Results {
		if s, ok := r.Data["text/plain"].(string); ok && r.IsMainResult {
			return s
		}
	}
	return ""
}

// Run runs code and follows it to its end.
func (m *Code) Run(ctx context.Context, code string, opts *CodeOptions) (*Execution, error) {
	if opts == nil {
		opts = &CodeOptions{}
	}
	req := apiv1.ExecuteCodeRequest{Code: code, ContextID: opts.ContextID, Language: opts.Language, Timeout: int64(opts.Timeout / time.Second)}
	resp, err := m.c.sendJSON(ctx, http.MethodPost, m.path("code", "execute"), req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var ex Execution
	err = ndjson.Read(resp.Body, func(ev apiv1.CodeEvent) error {
		switch ev.Type {
		case "stdout":
			ex.Stdout += ev.Text
			if opts.OnStdout != nil {
				opts.OnStdout(ev.Text)
			}
		case "stderr":
			ex.Stderr += ev.Text
			if opts.OnStderr != nil {
				opts.OnStderr(ev.Text)
			}
		case "result":
			ex.Results = append(ex.Results, ev)
			if opts.OnResult != nil {
				opts.OnResult(ev)
			}
		case "error":
			ex.Error = &ev
			if opts.OnError != nil {
				opts.OnError(ev)
			}
		case "end":
			ex.End = ev
		}
		return nil
	})
	return &ex, err
}

// CreateContext makes a code context (its kernel starts with its first run).
func (m *Code) CreateContext(ctx context.Context, req apiv1.CreateCodeContextRequest) (*apiv1.CodeContext, error) {
	return call[apiv1.CodeContext](ctx, m.c, http.MethodPost, m.path("code", "contexts"), nil, req)
}

// Contexts lists the sandbox's code contexts.
func (m *Code) Contexts(ctx context.Context) (*apiv1.CodeContextList, error) {
	return call[apiv1.CodeContextList](ctx, m.c, http.MethodGet, m.path("code", "contexts"), nil, nil)
}

// DeleteContext deletes a code context: its kernel ends.
func (m *Code) DeleteContext(ctx context.Context, id string) error {
	return m.c.do(ctx, http.MethodDelete, m.path("code", "contexts", id), nil, nil, nil)
}

// RestartContext gives a code context a new kernel, its state gone.
func (m *Code) RestartContext(ctx context.Context, id string) (*apiv1.CodeContext, error) {
	return call[apiv1.CodeContext](ctx, m.c, http.MethodPost, m.path("code", "contexts", id, "restart"), nil, nil)
}

// Interrupt interrupts what a code context runs; it lives on.
func (m *Code) Interrupt(ctx context.Context, id string) error {
	return m.c.do(ctx, http.MethodPost, m.path("code", "contexts", id, "interrupt"), nil, nil, nil)
}
