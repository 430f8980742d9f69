package agentcall

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/coder/websocket"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/ndjson"
)

// Sessions of serve's own in a sandbox, for a user (the SSH gateway): a
// command with its stdin, stdout and stderr apart, or a terminal, through
// the agent's API, as the sandbox's default user unless the request names
// another. Requests go through Transport, named by Host, so that they
// reuse connections within one incarnation of the sandbox, as the proxy's.

// Agent is the agent of one sandbox as serve reaches it now.
type Agent struct {
	host  string // the URL's host: Host(sb, addr)
	addr  string // where the agent listens
	token string
}

// For is the agent at addr of sandbox sb, as sb is now.
func For(sb sbx.Sandbox, addr string) Agent {
	return Agent{host: Host(sb, addr), addr: addr, token: sb.AccessToken}
}

// sessions carries the requests of sessions, on Transport.
var sessions = &http.Client{Transport: Transport}

// maxPtyMessage bounds a message from a terminal: the output it has
// buffered comes in one on attach.
const maxPtyMessage = 16 << 20

// request sends one request to the agent and fails unless it answers 2xx.
func (a Agent) request(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+a.host+path, body)
	if err != nil {
		return nil, err
	}
	req.Host = a.addr
	req.Header.Set(apiv1.AccessTokenHeader, a.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := sessions.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, agentError(method, path, resp)
	}
	return resp, nil
}

// agentError is the error of an answer that is not 2xx: the agent's
// envelope's detail when it sent one.
func agentError(method, path string, resp *http.Response) error {
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var e apiv1.Error
	if json.Unmarshal(msg, &e) == nil && e.Detail != "" {
		return fmt.Errorf("agent %s %s: %s", method, path, e.Detail)
	}
	return fmt.Errorf("agent %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(msg))
}

// call sends a JSON body (nil: none) and decodes a JSON answer into out
// (nil: drops it).
func (a Agent) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	ct := ""
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd, ct = bytes.NewReader(data), "application/json"
	}
	resp, err := a.request(ctx, method, path, ct, rd)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Streams are where a command's input comes from and its output goes.
type Streams struct {
	// Stdin, when not nil, is copied to the command's stdin as it comes;
	// its end closes the command's stdin. Nil: the command's stdin is empty.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Started, when not nil, is called with the command's PID once it runs,
	// before any output.
	Started func(pid int)
}

// Run starts a command and follows it to its end: stdin from s.Stdin,
// stdout and stderr to their writers as they come (a writer that blocks
// holds the command's output back). It answers the end event (its exit
// code, or the signal that ended it). When ctx ends first, Run ends with
// ctx's error and the command goes on.
func (a Agent) Run(ctx context.Context, req apiv1.StartCommandRequest, s Streams) (apiv1.CommandEvent, error) {
	req.Stdin = s.Stdin != nil
	req.Background = false
	body, err := json.Marshal(req)
	if err != nil {
		return apiv1.CommandEvent{}, err
	}
	resp, err := a.request(ctx, http.MethodPost, "/commands", "application/json", bytes.NewReader(body))
	if err != nil {
		return apiv1.CommandEvent{}, err
	}
	defer resp.Body.Close()
	var end *apiv1.CommandEvent
	var stdin sync.WaitGroup
	stdinCtx, stopStdin := context.WithCancel(ctx)
	defer func() {
		stopStdin()
		stdin.Wait()
	}()
	err = ndjson.Read(resp.Body, func(ev apiv1.CommandEvent) error {
		switch ev.Type {
		case "start":
			if s.Started != nil {
				s.Started(ev.PID)
			}
			if s.Stdin != nil {
				stdin.Go(func() { a.pipeStdin(stdinCtx, ev.PID, s.Stdin) })
			}
		case "stdout":
			return write(s.Stdout, ev.Data)
		case "stderr":
			return write(s.Stderr, ev.Data)
		case "end":
			end = &ev
			return io.EOF
		}
		return nil
	})
	switch {
	case ctx.Err() != nil:
		return apiv1.CommandEvent{}, ctx.Err()
	case err != nil:
		return apiv1.CommandEvent{}, fmt.Errorf("the agent's command stream: %w", err)
	case end == nil:
		return apiv1.CommandEvent{}, errors.New("the agent's command stream ended before the command did")
	}
	return *end, nil
}

// write writes data to w, when there is a w.
func write(w io.Writer, data []byte) error {
	if w == nil {
		return nil
	}
	_, err := w.Write(data)
	return err
}

// pipeStdin copies r to the stdin of command pid as it comes, in one
// streamed request, then closes its stdin. A command that ended meanwhile
// answers a 409, which is no failure here: its stdin is gone. When ctx
// ends, so does the request, though r may never return from a Read (an
// SSH channel whose client keeps its stdin open): the transport waits for
// its body's Read before it returns, so the body is a pipe that ctx's end
// closes, fed from r by a goroutine that ends at r's next Read.
func (a Agent) pipeStdin(ctx context.Context, pid int, r io.Reader) {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err) // nil: EOF
	}()
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	defer stop()
	ref := "/commands/" + strconv.Itoa(pid) + "/stdin"
	resp, err := a.request(ctx, http.MethodPost, ref, "application/octet-stream", pr)
	if err != nil {
		return
	}
	resp.Body.Close()
	if resp, err := a.request(ctx, http.MethodDelete, ref, "", nil); err == nil {
		resp.Body.Close()
	}
}

// Signal sends a signal (a name without SIG, such as TERM) to command pid's
// process group.
func (a Agent) Signal(ctx context.Context, pid int, signal string) error {
	return a.call(ctx, http.MethodPost, "/commands/"+strconv.Itoa(pid)+"/signal", apiv1.SignalRequest{Signal: signal}, nil)
}

// Pty is a terminal in the sandbox, attached: what it writes comes from
// Follow, what Write gets goes to it.
type Pty struct {
	PID  int
	conn *websocket.Conn
	wmu  sync.Mutex
}

// StartPty starts a terminal and attaches to it; ctx bounds the attachment
// (its end detaches, and the terminal goes on).
func (a Agent) StartPty(ctx context.Context, req apiv1.StartPtyRequest) (*Pty, error) {
	var info apiv1.CommandInfo
	if err := a.call(ctx, http.MethodPost, "/pty", req, &info); err != nil {
		return nil, err
	}
	conn, resp, err := websocket.Dial(ctx, "http://"+a.host+"/pty/"+strconv.Itoa(info.PID), &websocket.DialOptions{
		HTTPClient: sessions, HTTPHeader: http.Header{apiv1.AccessTokenHeader: {a.token}}, Host: a.addr,
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			err = agentError(http.MethodGet, "/pty", resp)
		}
		a.call(context.WithoutCancel(ctx), http.MethodDelete, "/commands/"+strconv.Itoa(info.PID), nil, nil) // no one will see it
		return nil, err
	}
	conn.SetReadLimit(maxPtyMessage)
	return &Pty{PID: info.PID, conn: conn}, nil
}

// Write types data into the terminal.
func (p *Pty) Write(ctx context.Context, data []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.conn.Write(ctx, websocket.MessageBinary, data)
}

// Resize sets the terminal's size.
func (p *Pty) Resize(ctx context.Context, cols, rows uint16) error {
	msg, err := json.Marshal(apiv1.PtyControl{Type: "resize", Cols: cols, Rows: rows})
	if err != nil {
		return err
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return p.conn.Write(ctx, websocket.MessageText, msg)
}

// Follow copies the terminal's output to out until its command exits, and
// answers how it exited.
func (p *Pty) Follow(ctx context.Context, out io.Writer) (apiv1.PtyControl, error) {
	for {
		typ, data, err := p.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return apiv1.PtyControl{}, ctx.Err()
			}
			return apiv1.PtyControl{}, fmt.Errorf("the terminal's connection: %w", err)
		}
		if typ == websocket.MessageBinary {
			if _, err := out.Write(data); err != nil {
				return apiv1.PtyControl{}, err
			}
			continue
		}
		var ctl apiv1.PtyControl
		if json.Unmarshal(data, &ctl) == nil && ctl.Type == "exit" {
			p.conn.Close(websocket.StatusNormalClosure, "")
			return ctl, nil
		}
	}
}

// Close detaches from the terminal; it goes on.
func (p *Pty) Close() error { return p.conn.CloseNow() }

// Start starts a command in the background and answers it at once; it
// goes on after the request.
func (a Agent) Start(ctx context.Context, req apiv1.StartCommandRequest) (apiv1.CommandInfo, error) {
	req.Background, req.Stdin = true, false
	var info apiv1.CommandInfo
	err := a.call(ctx, http.MethodPost, "/commands", req, &info)
	return info, err
}

// RunCode runs code in a code context and answers its end event; an error
// event is the error.
func (a Agent) RunCode(ctx context.Context, req apiv1.ExecuteCodeRequest) (apiv1.CodeEvent, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return apiv1.CodeEvent{}, err
	}
	resp, err := a.request(ctx, http.MethodPost, "/code/execute", "application/json", bytes.NewReader(body))
	if err != nil {
		return apiv1.CodeEvent{}, err
	}
	defer resp.Body.Close()
	var end, failed *apiv1.CodeEvent
	err = ndjson.Read(resp.Body, func(ev apiv1.CodeEvent) error {
		switch ev.Type {
		case "error":
			failed = &ev
		case "end":
			end = &ev
			return io.EOF
		}
		return nil
	})
	switch {
	case err != nil:
		return apiv1.CodeEvent{}, fmt.Errorf("the agent's code stream: %w", err)
	case failed != nil:
		return apiv1.CodeEvent{}, fmt.Errorf("%s: %s", failed.Name, failed.Value)
	case end == nil:
		return apiv1.CodeEvent{}, errors.New("the agent's code stream ended before the code did")
	}
	return *end, nil
}
