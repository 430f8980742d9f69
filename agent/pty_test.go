package agent_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/sbxdev/sbx/apiv1"
)

// terminal is a WebSocket attached to a PTY, with the screen so far.
type terminal struct {
	e      *env
	conn   *websocket.Conn
	screen strings.Builder
	exit   *apiv1.PtyControl
}

func (e *env) attach(ref string) *terminal {
	e.t.Helper()
	url := "ws" + strings.TrimPrefix(e.url, "http") + "/pty/" + ref
	conn, _, err := websocket.Dial(e.ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{apiv1.AccessTokenHeader: {token}}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.CloseNow() })
	return &terminal{e: e, conn: conn}
}

func (term *terminal) typeIn(s string) {
	term.e.t.Helper()
	if err := term.conn.Write(term.e.ctx, websocket.MessageBinary, []byte(s)); err != nil {
		term.e.t.Fatal(err)
	}
}

// waitFor reads the terminal until its screen holds want.
func (term *terminal) waitFor(want string) {
	term.e.t.Helper()
	for !strings.Contains(term.screen.String(), want) {
		if !term.read() {
			term.e.t.Fatalf("exited waiting for %q in %q", want, term.screen.String())
		}
	}
}

// waitExit reads the terminal until its exit message.
func (term *terminal) waitExit() {
	term.e.t.Helper()
	for term.read() {
	}
}

// read reads one message: output onto the screen (true), or the exit (false).
func (term *terminal) read() bool {
	term.e.t.Helper()
	typ, data, err := term.conn.Read(term.e.ctx)
	if err != nil {
		term.e.t.Fatalf("reading the terminal after %q: %v", term.screen.String(), err)
	}
	if typ == websocket.MessageBinary {
		term.screen.Write(data)
		return true
	}
	term.exit = &apiv1.PtyControl{}
	if err := json.Unmarshal(data, term.exit); err != nil || term.exit.Type != "exit" {
		term.e.t.Fatalf("control message %s", data)
	}
	return false
}

func TestPty(t *testing.T) {
	e := newEnv(t)
	var info apiv1.CommandInfo
	e.call(http.MethodPost, "/pty", apiv1.StartPtyRequest{Cols: 80, Rows: 24, Tag: "tty"}, http.StatusCreated, &info)
	if !info.Pty || !info.Running {
		t.Fatalf("started %+v", info)
	}
	term := e.attach("tty")
	term.typeIn("echo $((6*7))\n")
	term.waitFor("42")
	term.typeIn("echo $TERM\n")
	term.waitFor("xterm-256color")

	resize, _ := json.Marshal(apiv1.PtyControl{Type: "resize", Cols: 100, Rows: 30})
	if err := term.conn.Write(e.ctx, websocket.MessageText, resize); err != nil {
		t.Fatal(err)
	}
	term.typeIn("stty size\n")
	term.waitFor("30 100")
	e.call(http.MethodPost, "/pty/tty/resize", apiv1.PtySize{Cols: 120, Rows: 40}, http.StatusNoContent, nil)
	term.typeIn("stty size\n")
	term.waitFor("40 120")
	term.conn.Close(websocket.StatusNormalClosure, "")

	// A new connection replays the buffer, and input also comes by stdin.
	again := e.attach(strconv.Itoa(info.PID))
	again.waitFor("40 120")
	e.call(http.MethodPost, "/commands/tty/stdin", strings.NewReader("exit 5\n"), http.StatusNoContent, nil)
	again.waitExit()
	if again.exit == nil || again.exit.ExitCode == nil || *again.exit.ExitCode != 5 {
		t.Errorf("exit %+v", again.exit)
	}
	if _, _, err := again.conn.Read(e.ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after exit: %v", err)
	}
	e.call(http.MethodGet, "/commands/tty", nil, http.StatusOK, &info)
	if info.Running || *info.ExitCode != 5 {
		t.Errorf("ended %+v", info)
	}
	e.fail(http.MethodPost, "/pty", apiv1.StartPtyRequest{Cols: 0, Rows: 24}, http.StatusBadRequest)
}

func TestPtyKill(t *testing.T) {
	e := newEnv(t)
	var info apiv1.CommandInfo
	e.call(http.MethodPost, "/pty", apiv1.StartPtyRequest{Cols: 80, Rows: 24, Cmd: "sleep 1000"}, http.StatusCreated, &info)
	term := e.attach(strconv.Itoa(info.PID))
	e.call(http.MethodDelete, "/commands/"+strconv.Itoa(info.PID), nil, http.StatusOK, &info)
	term.waitExit()
	if term.exit.Signal != "KILL" || *term.exit.ExitCode != -1 {
		t.Errorf("exit %+v", term.exit)
	}
}
