package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"syscall"

	"github.com/coder/websocket"
	"github.com/creack/pty"
	"github.com/sbxdev/sbx/apiv1"
	"golang.org/x/sys/unix"
)

// maxPtyInput caps one input message from a PTY's WebSocket.
const maxPtyInput = 1 << 20

func (a *Agent) postPty(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.StartPtyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	size := apiv1.PtySize{Cols: req.Cols, Rows: req.Rows}
	if err := checkSize(size); err != nil {
		return err
	}
	argv, info := loginShell(), apiv1.CommandInfo{Cmd: req.Cmd}
	if req.Cmd != "" {
		argv = shellArgv(req.Cmd)
	} else {
		info.Args = argv
	}
	env := map[string]string{"TERM": "xterm-256color"}
	for k, v := range req.Env {
		env[k] = v
	}
	c, err := a.launch(launch{argv: argv, env: env, cwd: req.Cwd, user: req.User, tag: req.Tag, pty: &size, info: info})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, c.snapshot())
	return nil
}

// loginShell is the default program of a PTY.
func loginShell() []string {
	if _, err := os.Stat("/bin/bash"); err == nil {
		return []string{"/bin/bash", "-l"}
	}
	return []string{"/bin/sh", "-l"}
}

func checkSize(s apiv1.PtySize) error {
	if s.Cols < 1 || s.Cols > 1000 || s.Rows < 1 || s.Rows > 1000 {
		return invalid("cols and rows must be from 1 to 1000, not %dx%d", s.Cols, s.Rows)
	}
	return nil
}

func (a *Agent) resizePty(w http.ResponseWriter, r *http.Request) error {
	c, err := a.findPty(r)
	if err != nil {
		return err
	}
	var size apiv1.PtySize
	if err := decodeJSON(r, &size); err != nil {
		return err
	}
	if err := resize(c, size); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// findPty answers the PTY the request's {ref} names.
func (a *Agent) findPty(r *http.Request) (*command, error) {
	c, err := a.procs.find(r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	if c.tty == nil {
		return nil, invalid("command %d is not a PTY", c.pid)
	}
	return c, nil
}

// resize sets the size of c's terminal, which signals SIGWINCH to it.
func resize(c *command, size apiv1.PtySize) error {
	if err := checkSize(size); err != nil {
		return err
	}
	if !c.running() {
		return conflict("command %d has exited", c.pid)
	}
	raw, err := c.tty.SyscallConn()
	if err != nil {
		return err
	}
	var ioctlErr error
	err = raw.Control(func(fd uintptr) {
		ioctlErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Rows, Col: size.Cols})
	})
	if err := errors.Join(err, ioctlErr); err != nil {
		return conflict("command %d: resizing its terminal: %v", c.pid, err)
	}
	return nil
}

// attachPty connects a WebSocket to a PTY: what its buffer holds, then its
// output live, as binary messages; binary messages back are its input, text
// messages PtyControl (resize in, exit out). Any number may attach.
func (a *Agent) attachPty(w http.ResponseWriter, r *http.Request) error {
	c, err := a.findPty(r)
	if err != nil {
		return err
	}
	// No origin check: the access token travels in a header, which a
	// browser page on another origin cannot set on a WebSocket.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, Subprotocols: []string{apiv1.PtyProtocol}})
	if err != nil {
		return nil // Accept has answered
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxPtyInput)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		defer cancel() // the client left
		a.ptyInput(ctx, conn, c)
	}()
	rd := c.out.attach()
	defer rd.detach()
	for {
		chunks, err := rd.next(ctx, nil)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			break // the output ended
		}
		var msg []byte
		for _, ch := range chunks {
			msg = append(msg, ch.data...)
		}
		if err := conn.Write(ctx, websocket.MessageBinary, msg); err != nil {
			return nil
		}
	}
	<-c.done
	info := c.snapshot()
	exit, _ := json.Marshal(apiv1.PtyControl{Type: "exit", ExitCode: info.ExitCode, Signal: info.Signal})
	if err := conn.Write(ctx, websocket.MessageText, exit); err != nil {
		return nil
	}
	conn.Close(websocket.StatusNormalClosure, "exited")
	return nil
}

// ptyInput reads a PTY WebSocket's messages until it closes: input to the
// terminal, or a resize.
func (a *Agent) ptyInput(ctx context.Context, conn *websocket.Conn, c *command) {
	for {
		typ, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			err = c.writeStdin(bytes.NewReader(data))
		} else {
			var ctl apiv1.PtyControl
			if err = json.Unmarshal(data, &ctl); err == nil && ctl.Type == "resize" {
				err = resize(c, apiv1.PtySize{Cols: ctl.Cols, Rows: ctl.Rows})
			}
		}
		if err != nil {
			a.log.Debug("pty input", "pid", c.pid, "err", err)
		}
	}
}

// ptyWiring puts cmd on a new terminal of this size, as the leader of a new
// session (and so of its own process group) with the terminal as its
// controlling one.
func ptyWiring(cmd *exec.Cmd, size apiv1.PtySize) (*wiring, error) {
	master, tty, err := pty.Open()
	if err != nil {
		return nil, err
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: size.Rows, Cols: size.Cols}); err != nil {
		master.Close()
		tty.Close()
		return nil, err
	}
	// pty.Open leaves the master in blocking mode, where reads ignore
	// deadlines and Close does not interrupt them; a non-blocking duplicate
	// joins Go's poller.
	polled, err := pollable(master)
	master.Close()
	if err != nil {
		tty.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty, cmd.SysProcAttr.Ctty = true, true, 0
	return &wiring{outputs: []stream{{name: "stdout", f: polled}}, stdin: polled, tty: polled, child: []*os.File{tty}}, nil
}

// pollable duplicates f in non-blocking mode.
func pollable(f *os.File) (*os.File, error) {
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
