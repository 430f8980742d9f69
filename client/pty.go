package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/coder/websocket"
	"github.com/sbxdev/sbx/apiv1"
)

// Pty runs interactive terminals in a sandbox, through its agent. A PTY is a
// command with a terminal: Commands lists, signals and kills it too.
//
//	h, err := sb.Pty.Create(ctx, client.PtyOptions{Cols: 80, Rows: 24,
//		OnData: func(b []byte) { os.Stdout.Write(b) }})
//	…
//	h.Write(ctx, []byte("exit 3\n"))
//	res, err := h.Wait(ctx) // res.ExitCode == 3
type Pty struct{ sandboxAPI }

// Pty returns the terminals of the sandbox with this UUID or provider
// sandbox ID, for callers that have no Sandbox handle.
func (c *Client) Pty(id string) *Pty { return &Pty{sandboxAPI{c, id}} }

// PtyOptions describe a terminal to create; the zero value is a login shell
// as root in /workspace on an 80x24 terminal whose output is dropped.
type PtyOptions struct {
	Cols, Rows uint16            // the terminal's size; default 80x24
	Cmd        string            // a command line; default a login shell
	Env        map[string]string // added to the sandbox's environment
	Cwd        string            // default /workspace
	User       string            // a user name or UID; default the template's default user (user in base), else root
	Tag        string            // a name to find it by, unique among running commands
	// OnData gets the terminal's output as it comes, in order, from one
	// goroutine; it may keep the slice.
	OnData func([]byte)
}

// maxPtyMessage bounds a message from the terminal, the buffered output
// sent on connect included.
const maxPtyMessage = 16 << 20

// Create starts a terminal and connects to it; it returns once connected.
// The connection lasts until the terminal exits, ctx is done or Disconnect
// is called; only the first ends the terminal.
func (p *Pty) Create(ctx context.Context, opts PtyOptions) (*PtyHandle, error) {
	req := apiv1.StartPtyRequest{Cols: opts.Cols, Rows: opts.Rows, Cmd: opts.Cmd, Env: opts.Env,
		Cwd: opts.Cwd, User: opts.User, Tag: opts.Tag}
	if req.Cols == 0 || req.Rows == 0 {
		req.Cols, req.Rows = 80, 24
	}
	info, err := call[apiv1.CommandInfo](ctx, p.c, http.MethodPost, p.path("pty"), nil, req)
	if err != nil {
		return nil, err
	}
	h, err := p.connect(ctx, info, opts.OnData)
	if err != nil {
		p.abandon(ctx, info.PID)
		return nil, err
	}
	return h, nil
}

// Connect connects to a running terminal, by PID or tag: onData (which may
// be nil) gets what it has buffered, then its output live.
func (p *Pty) Connect(ctx context.Context, ref string, onData func([]byte)) (*PtyHandle, error) {
	info, err := p.command(ctx, ref)
	if err != nil {
		return nil, err
	}
	return p.connect(ctx, info, onData)
}

// Resize sets a terminal's size.
func (p *Pty) Resize(ctx context.Context, ref string, cols, rows uint16) error {
	return p.c.do(ctx, http.MethodPost, p.path("pty", ref, "resize"), nil, apiv1.PtySize{Cols: cols, Rows: rows}, nil)
}

// connect opens the WebSocket of the terminal info describes.
func (p *Pty) connect(ctx context.Context, info *apiv1.CommandInfo, onData func([]byte)) (*PtyHandle, error) {
	header := http.Header{}
	p.c.authorize(header)
	ref := strconv.Itoa(info.PID)
	// Dial takes the http(s) URL as is and upgrades it.
	conn, resp, err := websocket.Dial(ctx, p.c.base+p.path("pty", ref), &websocket.DialOptions{
		HTTPClient: p.c.http, HTTPHeader: header,
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			return nil, readError(resp)
		}
		return nil, err
	}
	conn.SetReadLimit(maxPtyMessage)
	ctx, cancel := context.WithCancelCause(ctx)
	h := &PtyHandle{pty: p, pid: info.PID, ref: ref, conn: conn, following: newFollowing(cancel)}
	go h.read(ctx, onData)
	return h, nil
}

// PtyHandle is a connection to a terminal. It is safe for concurrent use.
type PtyHandle struct {
	pty  *Pty
	pid  int
	ref  string
	conn *websocket.Conn
	following
}

// PID is the process ID of the terminal's command.
func (h *PtyHandle) PID() int { return h.pid }

// Write types data into the terminal.
func (h *PtyHandle) Write(ctx context.Context, data []byte) error {
	return h.conn.Write(ctx, websocket.MessageBinary, data)
}

// Resize sets the terminal's size.
func (h *PtyHandle) Resize(ctx context.Context, cols, rows uint16) error {
	msg, err := json.Marshal(apiv1.PtyControl{Type: "resize", Cols: cols, Rows: rows})
	if err != nil {
		return err
	}
	return h.conn.Write(ctx, websocket.MessageText, msg)
}

// Kill sends SIGKILL to the terminal's process group.
func (h *PtyHandle) Kill(ctx context.Context) error { return h.pty.kill(ctx, h.ref) }

// read passes output to onData until the exit message, then closes.
func (h *PtyHandle) read(ctx context.Context, onData func([]byte)) {
	defer close(h.done)
	defer h.cancel(nil)
	for {
		typ, data, err := h.conn.Read(ctx)
		switch {
		case ctx.Err() != nil:
			h.err = fmt.Errorf("terminal %d: %w", h.pid, context.Cause(ctx))
			return
		case websocket.CloseStatus(err) == websocket.StatusGoingAway:
			var ce websocket.CloseError
			errors.As(err, &ce)
			h.err = fmt.Errorf("terminal %d: %w", h.pid, &SandboxStoppedError{Reason: ce.Reason})
			return
		case err != nil:
			h.err = fmt.Errorf("terminal %d: the connection ended before the terminal exited: %w", h.pid, err)
			return
		case typ == websocket.MessageBinary:
			if onData != nil {
				onData(data)
			}
			continue
		}
		var msg apiv1.PtyControl
		if err := json.Unmarshal(data, &msg); err != nil {
			h.err = errors.Join(fmt.Errorf("terminal %d: a bad control message: %w", h.pid, err), h.conn.CloseNow())
			return
		}
		if msg.Type == "exit" {
			h.res = &CommandResult{PID: h.pid, ExitCode: -1, Signal: msg.Signal}
			if msg.ExitCode != nil {
				h.res.ExitCode = *msg.ExitCode
			}
			h.conn.Close(websocket.StatusNormalClosure, "")
			return
		}
	}
}
