package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/ndjson"
)

// Commands runs and controls processes in a sandbox, through its agent:
//
//	res, err := sb.Commands.Run(ctx, "make test", &client.CommandOptions{
//		Cwd:      "/workspace/app",
//		OnStdout: func(b []byte) { os.Stdout.Write(b) },
//	})
//	if err != nil {
//		return err // the command could not run, or its stream broke
//	}
//	fmt.Println("exit", res.ExitCode)
//
// A command that ran is never a Go error, whatever its exit: the result
// carries its ExitCode, the Signal that killed it or the Error that ended it
// (a timeout, say). Commands and PTYs are found by ref: a PID in decimal, or
// the tag they were started with.
type Commands struct{ sandboxAPI }

// Commands returns the commands of the sandbox with this UUID or provider
// sandbox ID, for callers that have no Sandbox handle.
func (c *Client) Commands(id string) *Commands { return &Commands{sandboxAPI{c, id}} }

// CommandOptions are the optional parts of running a command; the zero value
// runs it as root in /workspace with no stdin and no timeout.
type CommandOptions struct {
	Env     map[string]string // added to the sandbox's environment
	Cwd     string            // default /workspace
	User    string            // a user name or UID; default the template's default user (user in base), else root
	Tag     string            // a name to find it by, unique among running commands
	Timeout time.Duration     // its process group is killed after this; 0: never
	Stdin   bool              // keep stdin open for SendStdin until CloseStdin; default: empty stdin

	// OnStdout and OnStderr get each chunk of output as it comes, in order,
	// from one goroutine. Like io.Writer's Write, they must not keep the
	// slice: its bytes are reused once they return.
	OnStdout, OnStderr func([]byte)
	// DiscardOutput keeps the output out of the result, for output too large
	// to hold that the callbacks consume.
	DiscardOutput bool
}

// CommandResult is how a command ended, with its output.
type CommandResult struct {
	PID      int
	Stdout   string
	Stderr   string
	ExitCode int    // -1 when killed by a signal
	Signal   string // the signal that killed it, e.g. KILL
	Error    string // why it ended other than by exiting, e.g. a timeout
}

// errStreamCut is a command stream that ended before the command did.
var errStreamCut = errors.New("the command's stream ended before the command did")

// ErrDisconnected is why Wait fails after Disconnect.
var ErrDisconnected = errors.New("disconnected from the command")

// Run runs a command line with bash -l -c (sh -c without bash) and waits for
// it to end, streaming its output to the callbacks; opts may be nil. When
// ctx ends first, the command is killed, as by exec.CommandContext.
func (m *Commands) Run(ctx context.Context, cmd string, opts *CommandOptions) (*CommandResult, error) {
	return m.run(ctx, apiv1.StartCommandRequest{Cmd: cmd}, opts)
}

// RunArgs is Run for an argv, run directly and found on PATH.
func (m *Commands) RunArgs(ctx context.Context, args []string, opts *CommandOptions) (*CommandResult, error) {
	return m.run(ctx, apiv1.StartCommandRequest{Args: args}, opts)
}

// Start starts a command line in the background and follows its output
// until it ends, ctx is done or Disconnect is called, none of which stops
// it; it returns once the command runs. opts may be nil.
func (m *Commands) Start(ctx context.Context, cmd string, opts *CommandOptions) (*CommandHandle, error) {
	return m.start(ctx, apiv1.StartCommandRequest{Cmd: cmd}, opts)
}

// StartArgs is Start for an argv, run directly and found on PATH.
func (m *Commands) StartArgs(ctx context.Context, args []string, opts *CommandOptions) (*CommandHandle, error) {
	return m.start(ctx, apiv1.StartCommandRequest{Args: args}, opts)
}

// Connect follows a running or recently ended command: its output so far,
// then live, as Start does; opts may be nil, and only its callbacks and
// DiscardOutput count.
func (m *Commands) Connect(ctx context.Context, ref string, opts *CommandOptions) (*CommandHandle, error) {
	info, err := m.command(ctx, ref)
	if err != nil {
		return nil, err
	}
	return m.follow(ctx, info, opts)
}

// List returns the running commands and PTYs, and the recently ended ones.
func (m *Commands) List(ctx context.Context) ([]apiv1.CommandInfo, error) {
	l, err := call[apiv1.CommandList](ctx, m.c, http.MethodGet, m.path("commands"), nil, nil)
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Get describes one command or PTY.
func (m *Commands) Get(ctx context.Context, ref string) (*apiv1.CommandInfo, error) {
	return m.command(ctx, ref)
}

// Kill sends SIGKILL to the whole process group of a command or PTY.
func (m *Commands) Kill(ctx context.Context, ref string) error { return m.kill(ctx, ref) }

// Signal sends a signal, named without SIG (TERM, INT, HUP…) or by number.
func (m *Commands) Signal(ctx context.Context, ref, sig string) error {
	return m.c.do(ctx, http.MethodPost, m.path("commands", ref, "signal"), nil, apiv1.SignalRequest{Signal: sig}, nil)
}

// SendStdin writes data to the stdin of a command started with Stdin, or to
// a PTY's terminal.
func (m *Commands) SendStdin(ctx context.Context, ref string, data []byte) error {
	resp, err := m.c.send(ctx, http.MethodPost, m.path("commands", ref, "stdin"), nil, "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// CloseStdin closes a command's stdin: it reads end of file.
func (m *Commands) CloseStdin(ctx context.Context, ref string) error {
	return m.c.do(ctx, http.MethodDelete, m.path("commands", ref, "stdin"), nil, nil, nil)
}

// run runs req in the foreground: one request that streams until the end.
func (m *Commands) run(ctx context.Context, req apiv1.StartCommandRequest, opts *CommandOptions) (*CommandResult, error) {
	resp, err := m.c.sendJSON(ctx, http.MethodPost, m.path("commands"), opts.request(req))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := newOutput(opts, 0)
	res, err := out.follow(resp.Body)
	if err != nil && ctx.Err() != nil && out.res.PID != 0 {
		m.abandon(ctx, out.res.PID)
	}
	return res, err
}

// start starts req in the background and follows it.
func (m *Commands) start(ctx context.Context, req apiv1.StartCommandRequest, opts *CommandOptions) (*CommandHandle, error) {
	req = opts.request(req)
	req.Background = true
	info, err := call[apiv1.CommandInfo](ctx, m.c, http.MethodPost, m.path("commands"), nil, req)
	if err != nil {
		return nil, err
	}
	h, err := m.follow(ctx, info, opts)
	if err != nil {
		m.abandon(ctx, info.PID)
		return nil, err
	}
	return h, nil
}

// follow opens the stream of the command info describes and reads it in the
// background into a handle.
func (m *Commands) follow(ctx context.Context, info *apiv1.CommandInfo, opts *CommandOptions) (*CommandHandle, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	ref := strconv.Itoa(info.PID)
	resp, err := m.c.send(ctx, http.MethodGet, m.path("commands", ref, "stream"), nil, "", nil)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	h := &CommandHandle{cmds: m, info: *info, ref: ref, following: newFollowing(cancel)}
	go func() {
		defer close(h.done)
		defer resp.Body.Close()
		h.res, h.err = newOutput(opts, info.PID).follow(resp.Body)
		if h.err != nil && ctx.Err() != nil {
			h.err = fmt.Errorf("command %d: %w", info.PID, context.Cause(ctx))
		}
		cancel(nil)
	}()
	return h, nil
}

// request is req with the options set.
func (o *CommandOptions) request(req apiv1.StartCommandRequest) apiv1.StartCommandRequest {
	if o == nil {
		return req
	}
	req.Env, req.Cwd, req.User, req.Tag, req.Stdin = o.Env, o.Cwd, o.User, o.Tag, o.Stdin
	if s := seconds(o.Timeout); s != nil {
		req.Timeout = *s
	}
	return req
}

// CommandHandle follows a command started by Start or found by Connect. It
// is safe for concurrent use.
type CommandHandle struct {
	cmds *Commands
	info apiv1.CommandInfo
	ref  string
	following
}

// PID is the command's process ID in the sandbox.
func (h *CommandHandle) PID() int { return h.info.PID }

// Tag is the command's tag, if it has one.
func (h *CommandHandle) Tag() string { return h.info.Tag }

// Kill sends SIGKILL to the command's process group.
func (h *CommandHandle) Kill(ctx context.Context) error { return h.cmds.Kill(ctx, h.ref) }

// Signal sends the command a signal, named without SIG or by number.
func (h *CommandHandle) Signal(ctx context.Context, sig string) error {
	return h.cmds.Signal(ctx, h.ref, sig)
}

// SendStdin writes data to the command's stdin; it must have been started with Stdin.
func (h *CommandHandle) SendStdin(ctx context.Context, data []byte) error {
	return h.cmds.SendStdin(ctx, h.ref, data)
}

// CloseStdin closes the command's stdin.
func (h *CommandHandle) CloseStdin(ctx context.Context) error { return h.cmds.CloseStdin(ctx, h.ref) }

// output gathers a command's stream into its result.
type output struct {
	onStdout, onStderr func([]byte)
	keep               bool
	stdout, stderr     bytes.Buffer
	res                CommandResult
	ended              bool
}

func newOutput(opts *CommandOptions, pid int) *output {
	o := &output{keep: true, res: CommandResult{PID: pid}}
	if opts != nil {
		o.onStdout, o.onStderr, o.keep = opts.OnStdout, opts.OnStderr, !opts.DiscardOutput
	}
	return o
}

// follow reads a stream to its end event and answers the result.
func (o *output) follow(r io.Reader) (*CommandResult, error) {
	if err := ndjson.Read(r, o.event); err != nil {
		return nil, err
	}
	if !o.ended {
		return nil, errStreamCut
	}
	o.res.Stdout, o.res.Stderr = o.stdout.String(), o.stderr.String()
	return &o.res, nil
}

// event takes one event of the stream.
func (o *output) event(e apiv1.CommandEvent) error {
	switch e.Type {
	case "start":
		o.res.PID = e.PID
	case "stdout":
		o.chunk(&o.stdout, o.onStdout, e.Data)
	case "stderr":
		o.chunk(&o.stderr, o.onStderr, e.Data)
	case "error":
		return &SandboxStoppedError{Reason: e.Error}
	case "end":
		o.ended = true
		o.res.ExitCode, o.res.Signal, o.res.Error = -1, e.Signal, e.Error
		if e.ExitCode != nil {
			o.res.ExitCode = *e.ExitCode
		}
		return io.EOF // nothing follows the end
	}
	return nil
}

// chunk passes a piece of output on.
func (o *output) chunk(buf *bytes.Buffer, fn func([]byte), data []byte) {
	if o.keep {
		buf.Write(data)
	}
	if fn != nil {
		fn(data)
	}
}
