package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/sbxdev/sbx/agent/kernel"
	"github.com/sbxdev/sbx/apiv1"
)

// Code contexts: stateful interpreters, each a Jupyter kernel (package
// kernel: ipykernel from the template's Debian, spoken to over ZeroMQ)
// started on its first execution, so a sandbox that runs no code pays
// nothing. An execution that names no context runs in its language's
// default context, made on first use. Its output streams as NDJSON
// CodeEvents as the kernel publishes it; a timeout interrupts the kernel,
// whose state lives on. A kernel that dies leaves its context dead until
// it is restarted.

// maxCode bounds the code of one execution.
const maxCode = 1 << 20

// pythonKernel is the argv of a python context's kernel.
// IPython's history database is off: it writes to disk at every execution,
// and a context's state is its kernel's. ipykernel's 0.5 ms sleep before
// each reply is off: it is for clients that stop reading at the reply, and
// agent/kernel reads until the idle status, which follows every output.
var pythonKernel = []string{"python3", "-m", "ipykernel_launcher", "-f", "{connection_file}", "--HistoryManager.enabled=False", "--IPythonKernel._execute_sleep=0"}

// codeContext is one context.
type codeContext struct {
	info apiv1.CodeContext
	env  map[string]string

	mu     sync.Mutex  // held while its interpreter starts or runs
	kernel interpreter // nil until its first execution
	count  int         // executions so far
	dead   string
}

// interpreter is what runs a context's code: a Jupyter kernel (python), or
// a bash shell (bash.go).
type interpreter interface {
	Execute(ctx context.Context, code string, emit func(kernel.Output) error) (kernel.Reply, error)
	Interrupt() error
	Close() error
}

// contexts are the agent's code contexts, by ID.
type contexts struct {
	mu  sync.Mutex
	all map[string]*codeContext
}

func (a *Agent) postCodeContext(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.CreateCodeContextRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c, err := a.newCodeContext(req, false)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, c.state())
	return nil
}

// newCodeContext checks req and makes a context of it (its kernel starts
// with its first execution).
func (a *Agent) newCodeContext(req apiv1.CreateCodeContextRequest, def bool) (*codeContext, error) {
	if req.Language == "" {
		req.Language = "python"
	}
	if req.Language != "python" && req.Language != "bash" && req.Language != "javascript" {
		return nil, invalidField("language", "language %s is not one of python, bash and javascript", quote(req.Language))
	}
	cwd, err := a.workingDir(req.Cwd)
	if err != nil {
		return nil, err
	}
	acct, err := a.lookupAccount(req.User)
	if err != nil {
		return nil, err
	}
	if _, err := a.childEnv(acct, req.Env); err != nil {
		return nil, err
	}
	c := &codeContext{info: apiv1.CodeContext{ID: newContextID(), Language: req.Language, Cwd: cwd, User: acct.name, Default: def}, env: req.Env}
	a.code.mu.Lock()
	defer a.code.mu.Unlock()
	if a.code.all == nil {
		a.code.all = map[string]*codeContext{}
	}
	a.code.all[c.info.ID] = c
	return c, nil
}

func newContextID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// state is the context as the API shows it.
func (c *codeContext) state() apiv1.CodeContext {
	info := c.info
	switch {
	case !c.mu.TryLock():
		info.State = "busy"
		return info
	case c.dead != "":
		info.State, info.Error = "dead", c.dead
	case c.kernel == nil:
		info.State = "new"
	default:
		info.State = "idle"
	}
	c.mu.Unlock()
	return info
}

func (a *Agent) listCodeContexts(w http.ResponseWriter, _ *http.Request) error {
	a.code.mu.Lock()
	list := make([]*codeContext, 0, len(a.code.all))
	for _, c := range a.code.all {
		list = append(list, c)
	}
	a.code.mu.Unlock()
	out := apiv1.CodeContextList{Items: []apiv1.CodeContext{}}
	for _, c := range list {
		out.Items = append(out.Items, c.state())
	}
	sort.Slice(out.Items, func(i, j int) bool { return out.Items[i].ID < out.Items[j].ID })
	writeJSON(w, http.StatusOK, out)
	return nil
}

// findContext is the context {ctx} names.
func (a *Agent) findContext(id string) (*codeContext, error) {
	a.code.mu.Lock()
	defer a.code.mu.Unlock()
	c, ok := a.code.all[id]
	if !ok {
		return nil, notFound("code context %s does not exist", quote(id))
	}
	return c, nil
}

func (a *Agent) deleteCodeContext(w http.ResponseWriter, r *http.Request) error {
	c, err := a.findContext(r.PathValue("ctx"))
	if err != nil {
		return err
	}
	a.code.mu.Lock()
	delete(a.code.all, c.info.ID)
	a.code.mu.Unlock()
	if c.kernel != nil {
		c.kernel.Interrupt() // an execution under way ends, and lets go
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stop()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// stop ends the context's kernel, if any (its mu held).
func (c *codeContext) stop() {
	if c.kernel != nil {
		c.kernel.Close()
		c.kernel = nil
	}
}

func (a *Agent) restartCodeContext(w http.ResponseWriter, r *http.Request) error {
	c, err := a.findContext(r.PathValue("ctx"))
	if err != nil {
		return err
	}
	if c.kernel != nil {
		c.kernel.Interrupt()
	}
	c.mu.Lock()
	c.stop()
	c.dead, c.count = "", 0
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, c.state())
	return nil
}

func (a *Agent) interruptCodeContext(w http.ResponseWriter, r *http.Request) error {
	c, err := a.findContext(r.PathValue("ctx"))
	if err != nil {
		return err
	}
	if k := c.kernel; k != nil {
		k.Interrupt()
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// defaultContext is language's default context, made on first use.
func (a *Agent) defaultContext(language string) (*codeContext, error) {
	if language == "" {
		language = "python"
	}
	a.code.mu.Lock()
	for _, c := range a.code.all {
		if c.info.Default && c.info.Language == language {
			a.code.mu.Unlock()
			return c, nil
		}
	}
	a.code.mu.Unlock()
	return a.newCodeContext(apiv1.CreateCodeContextRequest{Language: language}, true)
}

func (a *Agent) executeCode(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.ExecuteCodeRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if len(req.Code) > maxCode {
		return invalidField("code", "the code is %d bytes, more than %d", len(req.Code), maxCode)
	}
	if req.Timeout < 0 {
		return invalidField("timeout", "timeout must be 0 (none) or more seconds")
	}
	var c *codeContext
	var err error
	if req.ContextID != "" {
		if req.Language != "" {
			return invalidField("language", "give contextId or language, not both")
		}
		c, err = a.findContext(req.ContextID)
	} else {
		c, err = a.defaultContext(req.Language)
	}
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != "" {
		return conflict("code context %s is dead (%s): restart it", c.info.ID, c.dead)
	}
	if c.kernel == nil {
		if err := a.startInterpreter(r.Context(), c); err != nil {
			return err
		}
	}
	ctx := context.WithoutCancel(r.Context()) // a client that leaves does not stop the code; a timeout does
	var cancel context.CancelFunc = func() {}
	if req.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.Timeout)*time.Second)
	}
	defer cancel()
	// Events go out within flushDelay of each other, gathered: in gVisor a
	// write to the network costs more than a short execution's events; the
	// headers go with the first, and the end event with the handler's return.
	streamHeaders(w, http.StatusOK)
	var mu sync.Mutex
	finished := false // once set, w is the handler's no more: a late flush would flush another response's buffer
	flushing := time.AfterFunc(time.Hour, func() {
		mu.Lock()
		defer mu.Unlock()
		if !finished {
			flush(w)
		}
	})
	flushing.Stop()
	start := time.Now()
	gone := false
	reply, err := c.kernel.Execute(ctx, req.Code, func(o kernel.Output) error {
		mu.Lock()
		defer mu.Unlock()
		if gone {
			return nil
		}
		if writeLine(w, apiv1.CodeEvent{Type: o.Type, Text: o.Text, Data: o.Data, IsMainResult: o.Main, Name: o.Name, Value: o.Value, Traceback: o.Traceback}) != nil {
			gone = true
		}
		flushing.Reset(flushDelay)
		return nil
	})
	flushing.Stop()
	mu.Lock()
	defer func() {
		finished = true
		mu.Unlock()
	}()
	end := apiv1.CodeEvent{Type: "end", ContextID: c.info.ID, Status: reply.Status, ExecutionCount: reply.ExecutionCount, DurationMs: time.Since(start).Milliseconds()}
	var exited *kernel.ExitedError
	switch {
	case errors.As(err, &exited):
		c.dead = exited.Error()
		c.stop()
		end.Status = "error"
		writeLine(w, apiv1.CodeEvent{Type: "error", Name: "KernelDied", Value: c.dead + ": the context is dead; restart it"})
	case err != nil:
		end.Status = "error"
		writeLine(w, apiv1.CodeEvent{Type: "error", Name: "ExecutionFailed", Value: err.Error()})
	case ctx.Err() != nil:
		end.Status = "timeout"
	case reply.Status == "aborted":
		end.Status = "interrupted"
	}
	writeLine(w, end)
	return nil
}

// startInterpreter starts c's interpreter as its user, in its directory,
// with its environment (its mu held).
func (a *Agent) startInterpreter(ctx context.Context, c *codeContext) error {
	switch c.info.Language {
	case "bash":
		b, err := a.startBash(c)
		if err != nil {
			return apiError(http.StatusServiceUnavailable, "the bash of context %s did not start: %v", c.info.ID, err)
		}
		c.kernel = b
		return nil
	case "javascript":
		n, err := a.startNode(c)
		if err != nil {
			return apiError(http.StatusServiceUnavailable, "the node of context %s did not start: %v", c.info.ID, err)
		}
		c.kernel = n
		return nil
	}
	acct, env, err := a.contextEnv(c)
	if err != nil {
		return err
	}
	env = append(env, "MPLBACKEND=module://matplotlib_inline.backend_inline", "PYDEVD_DISABLE_FILE_VALIDATION=1")
	k, err := kernel.Start(ctx, kernel.Spec{Argv: pythonKernel, Dir: c.info.Cwd, Env: env, Credential: acct.cred, Launch: a.reaper.start})
	if err != nil {
		return apiError(http.StatusServiceUnavailable, "the python kernel of context %s did not start: %v (the template needs python3-ipykernel: the code-interpreter template has it)", c.info.ID, err)
	}
	c.kernel = k
	return nil
}

// closeCode ends every context's kernel.
func (a *Agent) closeCode() {
	a.code.mu.Lock()
	all := a.code.all
	a.code.all = nil
	a.code.mu.Unlock()
	for _, c := range all {
		if c.kernel != nil {
			c.kernel.Interrupt()
		}
		c.mu.Lock()
		c.stop()
		c.mu.Unlock()
	}
}
