package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sbxdev/sbx/agent/kernel"
	"github.com/sbxdev/sbx/apiv1"
)

// E2B's code interpreter, for the unmodified @e2b/code-interpreter and
// e2b-code-interpreter SDKs: the protocol of the server E2B runs on port
// 49999 of a sandbox, which serve forwards here under /e2b/code (with the
// access token set: serve authenticates the SDK). It is an adapter over
// the agent's own code contexts (code.go), which both APIs share: a
// context made here is one of /code/contexts and the other way round, and
// an execution runs through the same interpreters, its kernel.Outputs
// translated into E2B's NDJSON lines. Where it differs from /code:
//
//   - Bodies are decoded leniently, as E2B's server does: unknown fields
//     are ignored and null is as good as absent (the Python SDK sends
//     every field, null when unset).
//   - Errors are E2B's: a status and a text/plain message, such as
//     "Context X not found" with a 404, which the SDKs read as text.
//   - An execution's client going away interrupts it, as E2B's server
//     does (the SDKs bound an execution by aborting its request): the
//     interpreter is interrupted as a /code/execute timeout interrupts it,
//     a python kernel's state living on.
//   - env_vars are refused (400) unless empty: an interpreter takes its
//     environment when it starts, and /code has no per-execution one.

// e2bCodeRoutes mounts the E2B code interpreter's routes on mux.
func (a *Agent) e2bCodeRoutes(mux *http.ServeMux) {
	route := func(pattern string, fn handler) { mux.Handle(pattern, a.e2bHandle(fn)) }
	route("POST /e2b/code/execute", a.e2bExecute)
	route("POST /e2b/code/contexts", a.e2bCreateContext)
	route("GET /e2b/code/contexts", a.e2bListContexts)
	route("POST /e2b/code/contexts/{ctx}/restart", a.e2bRestartContext)
	route("DELETE /e2b/code/contexts/{ctx}", a.e2bDeleteContext)
}

// e2bHandle adapts fn to http.Handler as handle does, but answers its
// error as E2B's server does: the status, and the detail as text/plain.
// The query is not checked: the SDKs may add ?source=.
func (a *Agent) e2bHandle(fn handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
		if err == nil {
			return
		}
		e, ok := errors.AsType[*apiv1.Error](err)
		if !ok {
			a.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			e = apiError(http.StatusInternalServerError, "%v", err)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(e.Code)
		io.WriteString(w, e.Detail)
	}
}

// e2bDecode reads a JSON body into v leniently: unknown fields ignored,
// null as good as absent, an empty body as {}. A body over maxJSONBody is
// a 413, one that does not parse a 400.
func e2bDecode(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody+1))
	if err != nil {
		return invalid("reading the request body: %v", err)
	}
	if len(data) > maxJSONBody {
		return apiError(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", maxJSONBody)
	}
	if strings.TrimSpace(string(data)) == "" {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return invalid("the body is not the JSON expected: %s", short(err.Error()))
	}
	return nil
}

// e2bContext is E2B's view of a code context.
type e2bContext struct {
	ID       string `json:"id"`
	Language string `json:"language"`
	Cwd      string `json:"cwd"`
}

func e2bContextOf(c *codeContext) e2bContext {
	return e2bContext{ID: c.info.ID, Language: c.info.Language, Cwd: c.info.Cwd}
}

// e2bFind is the context id names, or E2B's 404.
func (a *Agent) e2bFind(id string) (*codeContext, error) {
	c, err := a.findContext(id)
	if err != nil {
		return nil, notFound("Context %s not found", short(id))
	}
	return c, nil
}

// e2bLanguage is a language as E2B's server reads it: case and spaces
// aside, js for javascript; "" stays "" (python, for the caller).
func e2bLanguage(l string) string {
	l = strings.ToLower(strings.TrimSpace(l))
	if l == "js" {
		return "javascript"
	}
	return l
}

func (a *Agent) e2bCreateContext(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Language string `json:"language"`
		Cwd      string `json:"cwd"`
	}
	if err := e2bDecode(r, &req); err != nil {
		return err
	}
	c, err := a.newCodeContext(apiv1.CreateCodeContextRequest{Language: e2bLanguage(req.Language), Cwd: req.Cwd}, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, e2bContextOf(c))
	return nil
}

func (a *Agent) e2bListContexts(w http.ResponseWriter, _ *http.Request) error {
	a.code.mu.Lock()
	list := make([]e2bContext, 0, len(a.code.all))
	for _, c := range a.code.all {
		list = append(list, e2bContextOf(c))
	}
	a.code.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	writeJSON(w, http.StatusOK, list)
	return nil
}

// e2bRestartContext restarts a context as /code does, answering null as
// E2B's server does.
func (a *Agent) e2bRestartContext(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.e2bFind(r.PathValue("ctx")); err != nil {
		return err
	}
	if err := a.restartCodeContext(&recorder{header: http.Header{}}, r); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, nil)
	return nil
}

// e2bDeleteContext deletes a context as /code does: a 204.
func (a *Agent) e2bDeleteContext(w http.ResponseWriter, r *http.Request) error {
	if _, err := a.e2bFind(r.PathValue("ctx")); err != nil {
		return err
	}
	return a.deleteCodeContext(w, r)
}

// e2bExecuteRequest is the body of POST /e2b/code/execute.
type e2bExecuteRequest struct {
	Code      *string           `json:"code"`
	ContextID string            `json:"context_id"`
	Language  string            `json:"language"`
	EnvVars   map[string]string `json:"env_vars"`
}

// e2bExecute runs code in a context, streaming its output as E2B's lines
// as it comes (e2bLine), then number_of_executions and end_of_execution.
// It runs as /code/execute runs code, but for the client: one that goes
// away interrupts the execution.
func (a *Agent) e2bExecute(w http.ResponseWriter, r *http.Request) error {
	var req e2bExecuteRequest
	if err := e2bDecode(r, &req); err != nil {
		return err
	}
	switch {
	case req.Code == nil:
		return invalid("code is required")
	case len(*req.Code) > maxCode:
		return invalid("the code is %d bytes, more than %d", len(*req.Code), maxCode)
	case req.ContextID != "" && req.Language != "":
		return invalid("Only one of context_id or language can be provided")
	case len(req.EnvVars) > 0:
		return invalid("env_vars are not supported here: a context's interpreter takes its environment when it starts; give the sandbox its env, or set it in the code")
	}
	var c *codeContext
	var err error
	if req.ContextID != "" {
		c, err = a.e2bFind(req.ContextID)
	} else {
		c, err = a.defaultContext(e2bLanguage(req.Language))
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.Context().Err() != nil {
		return nil // the client left while another execution ran
	}
	if c.dead != "" {
		return conflict("code context %s is dead (%s): restart it", c.info.ID, c.dead)
	}
	if c.kernel == nil {
		if err := a.startInterpreter(r.Context(), c); err != nil {
			return err
		}
	}
	s := newE2BStream(w)
	// r's context ends when the client goes: the interpreter is
	// interrupted then, as a /code/execute timeout interrupts it.
	reply, err := c.kernel.Execute(r.Context(), *req.Code, func(o kernel.Output) error {
		s.send(e2bLine(o, time.Now()))
		return nil
	})
	var last []any
	var exited *kernel.ExitedError
	switch {
	case errors.As(err, &exited):
		c.dead = exited.Error()
		c.stop()
		last = append(last, e2bError{Type: "error", Name: "KernelDied", Value: c.dead + ": the context is dead; restart it"})
	case err != nil:
		last = append(last, e2bError{Type: "error", Name: "ExecutionFailed", Value: err.Error()})
	case reply.Status == "aborted": // the kernel ran nothing, as E2B's server says
		last = append(last, e2bError{Type: "error", Name: "ExecutionAborted", Value: "Execution was aborted"})
	}
	if reply.ExecutionCount > 0 {
		last = append(last, map[string]any{"type": "number_of_executions", "execution_count": reply.ExecutionCount})
	}
	s.finish(append(last, map[string]string{"type": "end_of_execution"})...)
	return nil
}

// e2bTimestamp is the format of an output line's timestamp (UTC, to the
// microsecond), which the Python SDK hands to its callbacks.
const e2bTimestamp = "2006-01-02T15:04:05.000000Z07:00"

// e2bOutput is a stdout or stderr line.
type e2bOutput struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Timestamp string `json:"timestamp"`
}

// e2bError is an error line: the traceback is one string, its lines
// joined with newlines as Jupyter shows them (terminal colours kept).
type e2bError struct {
	Type      string `json:"type"`
	Name      string `json:"name"`
	Value     string `json:"value"`
	Traceback string `json:"traceback"`
}

// e2bFields are the fields of a result line that hold MIME types' data, as
// E2B's server names them; any other type goes into the line's extra.
var e2bFields = map[string]string{
	"text/plain":             "text",
	"text/html":              "html",
	"text/markdown":          "markdown",
	"image/svg+xml":          "svg",
	"image/png":              "png",
	"image/jpeg":             "jpeg",
	"application/pdf":        "pdf",
	"text/latex":             "latex",
	"application/json":       "json",
	"application/javascript": "javascript",
	"e2b/data":               "data",
	"e2b/chart":              "chart",
}

// e2bLine is an interpreter's output as a line of E2B's stream.
func e2bLine(o kernel.Output, now time.Time) any {
	switch o.Type {
	case "result":
		line := map[string]any{"type": "result", "is_main_result": o.Main}
		extra := map[string]any{}
		for mime, v := range o.Data {
			field, ok := e2bFields[mime]
			if !ok {
				extra[mime] = v
				continue
			}
			if s, ok := v.(string); ok && field == "text" {
				v = unquote(s)
			}
			line[field] = v
		}
		line["extra"] = extra
		return line
	case "error":
		return e2bError{Type: "error", Name: o.Name, Value: o.Value, Traceback: strings.Join(o.Traceback, "\n")}
	default: // stdout, stderr
		return e2bOutput{Type: o.Type, Text: o.Text, Timestamp: now.UTC().Format(e2bTimestamp)}
	}
}

// unquote strips the quotes around a string's repr ('hello' → hello), as
// E2B's server does with a result's text.
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// e2bStream writes an execution's lines to w, each whole in one Write,
// gathered as /code/execute gathers its events (in gVisor a write to the
// network costs more than a short execution's lines): flushed within
// flushDelay of the first line a flush has not sent. The headers go out
// within flushDelay too, whatever the code prints, since the SDKs bound
// the wait for them; the last lines go out as the handler returns.
type e2bStream struct {
	w     http.ResponseWriter
	timer *time.Timer

	mu      sync.Mutex
	waiting bool // the timer will flush
	gone    bool // a write failed: the client left
	done    bool // w is the handler's no more: a late flush would flush another response's buffer
}

// newE2BStream answers the headers of the stream, to go out within
// flushDelay.
func newE2BStream(w http.ResponseWriter) *e2bStream {
	streamHeaders(w, http.StatusOK)
	s := &e2bStream{w: w, waiting: true}
	s.timer = time.AfterFunc(flushDelay, s.flush)
	return s
}

// send writes a line, to be flushed within flushDelay.
func (s *e2bStream) send(line any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.write(line)
	if !s.waiting && !s.gone {
		s.waiting = true
		s.timer.Reset(flushDelay)
	}
}

// write writes a line unless the client left (s.mu held).
func (s *e2bStream) write(line any) {
	if s.gone || s.done {
		return
	}
	if _, err := s.w.Write(asciiLine(line)); err != nil {
		s.gone = true
	}
}

func (s *e2bStream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting = false
	if !s.done {
		flush(s.w)
	}
}

// finish writes the last lines, which go out as the handler returns, and
// gives w back.
func (s *e2bStream) finish(lines ...any) {
	s.timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, line := range lines {
		s.write(line)
	}
	s.done = true
}

// asciiLine is v as one NDJSON line of ASCII, every other character
// escaped (\uXXXX) as Python's json.dumps, and so E2B's server, writes it:
// the JS SDK decodes each chunk that reaches it on its own, and would
// garble a character split between two.
func asciiLine(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil { // not for the maps and strings of kernel.Output
		data, _ = json.Marshal(e2bError{Type: "error", Name: "EncodingFailed", Value: err.Error()})
	}
	out := make([]byte, 0, len(data)+1)
	for len(data) > 0 {
		if data[0] < utf8.RuneSelf {
			out = append(out, data[0])
			data = data[1:]
			continue
		}
		r, size := utf8.DecodeRune(data) // json.Marshal wrote valid UTF-8
		data = data[size:]
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
	}
	return append(out, '\n')
}
