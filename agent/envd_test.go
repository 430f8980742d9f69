package agent_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
)

// The agent's envd API, driven over HTTP as E2B's SDKs drive it: Connect
// with JSON (unary and server-streaming procedures) and /files.

const envdPrefix = "/e2b/envd"

// envdHeaders are a request's extra headers.
type envdHeaders map[string]string

// basicAuth is the Authorization header E2B's SDKs send for a user.
func basicAuth(user string) envdHeaders {
	return envdHeaders{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"))}
}

// envdPost posts a body of a content type to an envd path, with the token.
func (e *env) envdPost(path, contentType string, body []byte, h envdHeaders) *http.Response {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, e.url+envdPrefix+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set(apiv1.AccessTokenHeader, token)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Connect-Protocol-Version", "1")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// envdMessage is a request message: a Go value, or JSON as it is.
func envdMessage(t *testing.T, msg any) []byte {
	t.Helper()
	if s, ok := msg.(string); ok {
		return []byte(s)
	}
	data, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// envdUnary calls a unary procedure: its status and body.
func (e *env) envdUnary(proc string, msg any, h envdHeaders) (int, []byte) {
	e.t.Helper()
	resp := e.envdPost("/"+proc, "application/json", envdMessage(e.t, msg), h)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("%s: Content-Type %q: %s", proc, ct, data)
	}
	return resp.StatusCode, data
}

// envdOK calls a unary procedure that must succeed, and decodes its answer
// into out (unless nil).
func (e *env) envdOK(proc string, msg, out any, h envdHeaders) {
	e.t.Helper()
	status, data := e.envdUnary(proc, msg, h)
	if status != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", proc, envdMessage(e.t, msg), status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s: %v in %s", proc, err, data)
		}
	}
}

// connectErr is a Connect error as the agent answers it.
type connectErr struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// envdFail calls a unary procedure that must fail with a status and a
// Connect code.
func (e *env) envdFail(proc string, msg any, status int, code string, h envdHeaders) {
	e.t.Helper()
	got, data := e.envdUnary(proc, msg, h)
	var ce connectErr
	if err := json.Unmarshal(data, &ce); err != nil || got != status || ce.Code != code || ce.Message == "" {
		e.t.Fatalf("%s %s: %d %s, want %d and code %s", proc, envdMessage(e.t, msg), got, data, status, code)
	}
}

// envdStream is a server stream being read.
type envdStream struct {
	t    *testing.T
	resp *http.Response
	br   *bufio.Reader
	end  *connectErr // once read: the end-stream's error, or a zero one
}

// envdOpen opens a server stream: its one request message enveloped.
func (e *env) envdOpen(proc string, msg any, h envdHeaders) *envdStream {
	e.t.Helper()
	data := envdMessage(e.t, msg)
	body := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(data)))
	resp := e.envdPost("/"+proc, "application/connect+json", append(body, data...), h)
	e.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/connect+json" {
		data, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("%s: %d %s %s", proc, resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	return &envdStream{t: e.t, resp: resp, br: bufio.NewReader(resp.Body)}
}

// next reads the next message, or the end of the stream (false).
func (s *envdStream) next() ([]byte, bool) {
	s.t.Helper()
	head := make([]byte, 5)
	if _, err := io.ReadFull(s.br, head); err != nil {
		s.t.Fatalf("reading an envelope: %v", err)
	}
	msg := make([]byte, binary.BigEndian.Uint32(head[1:]))
	if _, err := io.ReadFull(s.br, msg); err != nil {
		s.t.Fatalf("reading a message: %v", err)
	}
	switch head[0] {
	case 0:
		return msg, true
	case 2:
		var end struct {
			Error *connectErr `json:"error"`
		}
		if err := json.Unmarshal(msg, &end); err != nil {
			s.t.Fatalf("end of stream %s: %v", msg, err)
		}
		s.end = &connectErr{}
		if end.Error != nil {
			s.end = end.Error
		}
		if rest, _ := io.ReadAll(s.br); len(rest) > 0 {
			s.t.Fatalf("%q after the end of the stream", rest)
		}
		return nil, false
	}
	s.t.Fatalf("envelope flags %d", head[0])
	return nil, false
}

// mustEnd reads the end of a stream that must end with a Connect code.
func (s *envdStream) mustEnd(code string) {
	s.t.Helper()
	if msg, ok := s.next(); ok {
		s.t.Fatalf("message %s, want the end of the stream", msg)
	}
	if s.end.Code != code {
		s.t.Fatalf("stream ended with %+v, want code %q", s.end, code)
	}
}

// processEvent is a process.ProcessEvent as the SDKs decode it.
type processEvent struct {
	Event struct {
		Start *struct {
			PID int `json:"pid"`
		} `json:"start"`
		Data *struct {
			Stdout []byte `json:"stdout"`
			Stderr []byte `json:"stderr"`
			Pty    []byte `json:"pty"`
		} `json:"data"`
		End       *endEvent `json:"end"`
		Keepalive *struct{} `json:"keepalive"`
	} `json:"event"`
}

type endEvent struct {
	ExitCode int     `json:"exitCode"`
	Exited   bool    `json:"exited"`
	Status   string  `json:"status"`
	Error    *string `json:"error"`
}

// process is a process's stream, as read so far.
type process struct {
	*envdStream
	pid                 int
	stdout, stderr, pty strings.Builder
	end                 *endEvent
	endRaw              string
	keepalives          int
}

// envdStart starts a process and reads its start event.
func (e *env) envdStart(msg any, h envdHeaders) *process {
	e.t.Helper()
	return e.envdProcess("process.Process/Start", msg, h)
}

// envdConnect connects to a process and reads its start event.
func (e *env) envdConnect(msg any, h envdHeaders) *process {
	e.t.Helper()
	return e.envdProcess("process.Process/Connect", msg, h)
}

func (e *env) envdProcess(proc string, msg any, h envdHeaders) *process {
	e.t.Helper()
	p := &process{envdStream: e.envdOpen(proc, msg, h)}
	first, ok := p.next()
	if !ok {
		e.t.Fatalf("%s ended at once: %+v", proc, p.end)
	}
	var ev processEvent
	if err := json.Unmarshal(first, &ev); err != nil || ev.Event.Start == nil || ev.Event.Start.PID == 0 {
		e.t.Fatalf("first message %s, want the start event", first)
	}
	p.pid = ev.Event.Start.PID
	return p
}

// read reads one message into what was read so far: false at the end of
// the stream, which must come after the end event.
func (p *process) read() bool {
	p.t.Helper()
	msg, ok := p.next()
	if !ok {
		if p.end == nil || p.envdStream.end.Code != "" {
			p.t.Fatalf("the stream ended with %+v after %q %q %q, no end event", p.envdStream.end, p.stdout.String(), p.stderr.String(), p.pty.String())
		}
		return false
	}
	if p.end != nil {
		p.t.Fatalf("message %s after the end event", msg)
	}
	var ev processEvent
	if err := json.Unmarshal(msg, &ev); err != nil {
		p.t.Fatalf("message %s: %v", msg, err)
	}
	switch e := ev.Event; {
	case e.Data != nil:
		p.stdout.Write(e.Data.Stdout)
		p.stderr.Write(e.Data.Stderr)
		p.pty.Write(e.Data.Pty)
	case e.End != nil:
		p.end, p.endRaw = e.End, string(msg)
	case e.Keepalive != nil:
		p.keepalives++
	default:
		p.t.Fatalf("message %s", msg)
	}
	return true
}

// wait reads the stream to its end.
func (p *process) wait() *endEvent {
	p.t.Helper()
	for p.read() {
	}
	return p.end
}

// until reads the stream until what has been read holds want.
func (p *process) until(out *strings.Builder, want string) {
	p.t.Helper()
	for !strings.Contains(out.String(), want) {
		if !p.read() {
			p.t.Fatalf("ended waiting for %q in %q", want, out.String())
		}
	}
}

// sh is a StartRequest running a shell script, stdin closed.
func sh(script string) map[string]any {
	return map[string]any{"process": map[string]any{"cmd": "/bin/sh", "args": []string{"-c", script}}, "stdin": false}
}

// selector names a process by PID.
func selector(pid int) map[string]any { return map[string]any{"pid": pid} }

func TestEnvdStartOutputAndExit(t *testing.T) {
	e := newEnv(t)
	p := e.envdStart(sh("echo out; echo err >&2; exit 3"), nil)
	end := p.wait()
	if p.stdout.String() != "out\n" || p.stderr.String() != "err\n" {
		t.Errorf("stdout %q, stderr %q", p.stdout.String(), p.stderr.String())
	}
	if end.ExitCode != 3 || !end.Exited || end.Status != "exit status 3" || end.Error == nil || *end.Error != "exit status 3" {
		t.Errorf("end %s", p.endRaw)
	}
	// A success's end omits what is 0 or false, as protojson does.
	p = e.envdStart(sh("true"), nil)
	if p.wait(); p.endRaw != `{"event":{"end":{"exited":true,"status":"exit status 0"}}}` {
		t.Errorf("end %s", p.endRaw)
	}
}

func TestEnvdStartEnvsAndCwd(t *testing.T) {
	e := newEnv(t)
	sub := filepath.Join(e.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	p := e.envdStart(map[string]any{"process": map[string]any{
		"cmd": "/bin/sh", "args": []string{"-c", `echo "$FOO"; pwd`}, "envs": map[string]string{"FOO": "bar"}, "cwd": sub,
	}}, nil)
	if p.wait(); p.stdout.String() != "bar\n"+sub+"\n" {
		t.Errorf("stdout %q", p.stdout.String())
	}
	// No cwd: the agent's working directory; ~: the user's home.
	p = e.envdStart(sh("pwd"), nil)
	if p.wait(); p.stdout.String() != e.dir+"\n" {
		t.Errorf("no cwd: %q, want %q", p.stdout.String(), e.dir)
	}
	if u, err := user.Current(); err == nil && isDir(u.HomeDir) {
		p := e.envdStart(map[string]any{"process": map[string]any{"cmd": "pwd", "cwd": "~"}}, nil)
		if p.wait(); p.stdout.String() != u.HomeDir+"\n" {
			t.Errorf("cwd ~: %q, want %q", p.stdout.String(), u.HomeDir)
		}
	}
	s := e.envdOpen("process.Process/Start", map[string]any{"process": map[string]any{"cmd": "true", "cwd": e.dir + "/missing"}}, nil)
	s.mustEnd("invalid_argument")
	s = e.envdOpen("process.Process/Start", `{"process":{}}`, nil)
	s.mustEnd("invalid_argument")
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func TestEnvdStdin(t *testing.T) {
	e := newEnv(t)
	// stdin is open unless the request says false, as envd has it.
	p := e.envdStart(`{"process":{"cmd":"cat"}}`, nil)
	e.envdOK("process.Process/SendInput", map[string]any{"process": selector(p.pid), "input": map[string]any{"stdin": []byte("hi ")}}, nil, nil)
	// A PID as a string, and bytes in URL-safe base64 without padding.
	e.envdOK("process.Process/SendInput", `{"process":{"pid":"`+strconv.Itoa(p.pid)+`"},"input":{"stdin":"dGhlcmU_"}}`, nil, nil)
	e.envdOK("process.Process/CloseStdin", map[string]any{"process": selector(p.pid)}, nil, nil)
	if end := p.wait(); p.stdout.String() != "hi there?" || end.ExitCode != 0 {
		t.Errorf("stdout %q, end %s", p.stdout.String(), p.endRaw)
	}

	p = e.envdStart(map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"600"}}, "stdin": false}, nil)
	e.envdFail("process.Process/SendInput", map[string]any{"process": selector(p.pid), "input": map[string]any{"stdin": "aGk="}}, http.StatusBadRequest, "failed_precondition", nil)
	e.envdOK("process.Process/SendSignal", map[string]any{"process": selector(p.pid), "signal": "SIGNAL_SIGKILL"}, nil, nil)
	p.wait()
	e.envdFail("process.Process/SendInput", map[string]any{"process": selector(p.pid), "input": map[string]any{"stdin": "aGk="}}, http.StatusNotFound, "not_found", nil)
	e.envdFail("process.Process/CloseStdin", map[string]any{"process": selector(p.pid)}, http.StatusNotFound, "not_found", nil)
	e.envdFail("process.Process/SendInput", `{"process":{}}`, http.StatusBadRequest, "invalid_argument", nil)
}

// A client that leaves leaves the process running; Connect, by tag or PID,
// replays its output from the start, then follows it live.
func TestEnvdConnectReplays(t *testing.T) {
	e := newEnv(t)
	p := e.envdStart(map[string]any{"process": map[string]any{"cmd": "/bin/sh", "args": []string{"-c", "echo one; cat; echo two"}}, "tag": "job", "stdin": true}, nil)
	p.until(&p.stdout, "one\n")
	p.resp.Body.Close()

	c := e.envdConnect(map[string]any{"process": map[string]any{"tag": "job"}}, nil)
	if c.pid != p.pid {
		t.Fatalf("connected to %d, want %d", c.pid, p.pid)
	}
	c.until(&c.stdout, "one\n")
	e.envdOK("process.Process/CloseStdin", map[string]any{"process": selector(p.pid)}, nil, nil)
	if end := c.wait(); c.stdout.String() != "one\ntwo\n" || end.ExitCode != 0 {
		t.Errorf("stdout %q, end %s", c.stdout.String(), c.endRaw)
	}
	// Once ended, it is still there to replay, whole.
	c = e.envdConnect(map[string]any{"process": selector(p.pid)}, nil)
	if c.wait(); c.stdout.String() != "one\ntwo\n" {
		t.Errorf("replayed %q", c.stdout.String())
	}
	s := e.envdOpen("process.Process/Connect", map[string]any{"process": selector(999999)}, nil)
	s.mustEnd("not_found")
}

// Connect-Timeout-Ms ends a Connect's stream, not its process.
func TestEnvdConnectTimeout(t *testing.T) {
	e := newEnv(t)
	p := e.envdStart(map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"600"}}}, nil)
	c := e.envdOpen("process.Process/Connect", map[string]any{"process": selector(p.pid)}, envdHeaders{"Connect-Timeout-Ms": "50"})
	if msg, ok := c.next(); !ok || !strings.Contains(string(msg), `"start"`) {
		t.Fatalf("first message %s", msg)
	}
	c.mustEnd("deadline_exceeded")
	var list struct {
		Processes []struct {
			PID int `json:"pid"`
		} `json:"processes"`
	}
	e.envdOK("process.Process/List", `{}`, &list, nil)
	if len(list.Processes) != 1 || list.Processes[0].PID != p.pid {
		t.Errorf("processes %+v, want %d still running", list.Processes, p.pid)
	}
}

// listed is a process.ProcessInfo.
type listed struct {
	Config struct {
		Cmd  string            `json:"cmd"`
		Args []string          `json:"args"`
		Envs map[string]string `json:"envs"`
		Cwd  string            `json:"cwd"`
	} `json:"config"`
	PID int    `json:"pid"`
	Tag string `json:"tag"`
}

func TestEnvdList(t *testing.T) {
	e := newEnv(t)
	var list struct {
		Processes []listed `json:"processes"`
	}
	status, data := e.envdUnary("process.Process/List", `{}`, nil)
	if status != http.StatusOK || string(data) != "{}\n" {
		t.Errorf("empty list: %d %s", status, data)
	}
	e.envdStart(sh("true"), nil).wait() // ended: not listed
	p := e.envdStart(map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"600"}, "envs": map[string]string{"A": "1"}}, "tag": "sleeper"}, nil)
	var own apiv1.CommandInfo // started through sbx's own API
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "sleep 600", Background: true}, http.StatusCreated, &own)

	e.envdOK("process.Process/List", `{"unknown":1}`, &list, nil)
	if len(list.Processes) != 2 {
		t.Fatalf("processes %+v", list.Processes)
	}
	for _, l := range list.Processes {
		switch l.PID {
		case own.PID: // a command line, run by a shell
			if l.Config.Cmd != "/bin/bash" && l.Config.Cmd != "/bin/sh" || !slices.Contains(l.Config.Args, "sleep 600") || l.Config.Cwd != e.dir {
				t.Errorf("sbx's command listed as %+v", l)
			}
		case p.pid:
			if l.Tag != "sleeper" || l.Config.Cmd != "sleep" || !slices.Equal(l.Config.Args, []string{"600"}) || l.Config.Envs["A"] != "1" || l.Config.Cwd != e.dir {
				t.Errorf("envd's process listed as %+v", l)
			}
		default:
			t.Errorf("listed %+v", l)
		}
	}
}

func TestEnvdSignals(t *testing.T) {
	e := newEnv(t)
	p := e.envdStart(map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"600"}}}, nil)
	e.envdOK("process.Process/SendSignal", map[string]any{"process": selector(p.pid), "signal": "SIGNAL_SIGKILL"}, nil, nil)
	if end := p.wait(); end.ExitCode != -1 || end.Exited || end.Status != "signal: killed" || end.Error == nil || *end.Error != "signal: killed" {
		t.Errorf("end %s", p.endRaw)
	}
	e.envdFail("process.Process/SendSignal", map[string]any{"process": selector(p.pid), "signal": "SIGNAL_SIGKILL"}, http.StatusNotFound, "not_found", nil)
	e.envdFail("process.Process/SendSignal", map[string]any{"process": selector(999999), "signal": "SIGNAL_SIGKILL"}, http.StatusNotFound, "not_found", nil)

	p = e.envdStart(map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"600"}}}, nil)
	e.envdFail("process.Process/SendSignal", map[string]any{"process": selector(p.pid), "signal": "SIGNAL_UNSPECIFIED"}, http.StatusBadRequest, "invalid_argument", nil)
	e.envdOK("process.Process/SendSignal", map[string]any{"process": selector(p.pid), "signal": 15}, nil, nil) // an enum as its number
	if end := p.wait(); end.ExitCode != -1 || end.Status != "signal: terminated" {
		t.Errorf("end %s", p.endRaw)
	}
}

// Connect-Timeout-Ms on Start is the process's lifetime.
func TestEnvdStartTimeoutKills(t *testing.T) {
	e := newEnv(t)
	p := e.envdStart(map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"600"}}}, envdHeaders{"Connect-Timeout-Ms": "100"})
	if end := p.wait(); end.ExitCode != -1 || end.Status != "signal: killed" {
		t.Errorf("end %s", p.endRaw)
	}
	e.envdOpen("process.Process/Start", sh("true"), envdHeaders{"Connect-Timeout-Ms": "soon"}).mustEnd("invalid_argument")
}

// A quiet stream is kept alive at the interval asked for, after its start.
func TestEnvdKeepalive(t *testing.T) {
	e := newEnv(t)
	p := e.envdStart(map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"600"}}}, envdHeaders{"Keepalive-Ping-Interval": "1"})
	msg, _ := p.next()
	if string(msg) != `{"event":{"keepalive":{}}}` {
		t.Fatalf("message %s, want a keepalive", msg)
	}
	e.envdOK("process.Process/SendSignal", map[string]any{"process": selector(p.pid), "signal": "SIGNAL_SIGKILL"}, nil, nil)
	p.wait()

	w := e.envdOpen("filesystem.Filesystem/WatchDir", map[string]any{"path": e.dir}, envdHeaders{"Keepalive-Ping-Interval": "1"})
	for _, want := range []string{`{"start":{}}`, `{"keepalive":{}}`} {
		if msg, _ := w.next(); string(msg) != want {
			t.Fatalf("message %s, want %s", msg, want)
		}
	}
}

func TestEnvdPty(t *testing.T) {
	e := newEnv(t)
	p := e.envdStart(map[string]any{
		"process": map[string]any{"cmd": "/bin/sh", "envs": map[string]string{"PS1": "$ "}},
		"pty":     map[string]any{"size": map[string]any{"cols": 80, "rows": 24}},
	}, nil)
	input := func(s string) {
		t.Helper()
		e.envdOK("process.Process/SendInput", map[string]any{"process": selector(p.pid), "input": map[string]any{"pty": []byte(s)}}, nil, nil)
	}
	input("stty size\n")
	p.until(&p.pty, "24 80")
	e.envdOK("process.Process/Update", map[string]any{"process": selector(p.pid), "pty": map[string]any{"size": map[string]any{"cols": 100, "rows": 30}}}, nil, nil)
	input("stty size\n")
	p.until(&p.pty, "30 100")
	input("exit 7\n")
	if end := p.wait(); end.ExitCode != 7 || p.stdout.Len() > 0 {
		t.Errorf("end %s, stdout %q", p.endRaw, p.stdout.String())
	}
	e.envdFail("process.Process/Update", map[string]any{"process": selector(p.pid), "pty": map[string]any{"size": map[string]any{"cols": 100, "rows": 30}}}, http.StatusNotFound, "not_found", nil)

	q := e.envdStart(map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"600"}}}, nil)
	e.envdFail("process.Process/Update", map[string]any{"process": selector(q.pid), "pty": map[string]any{"size": map[string]any{"cols": 100, "rows": 30}}}, http.StatusBadRequest, "invalid_argument", nil)
	e.envdOpen("process.Process/Start", map[string]any{"process": map[string]any{"cmd": "sh"}, "pty": map[string]any{"size": map[string]any{"cols": 0, "rows": 24}}}, nil).mustEnd("invalid_argument")
}

// envd and sbx's own API share one table of processes.
func TestEnvdSharesCommands(t *testing.T) {
	e := newEnv(t)
	p := e.envdStart(map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"600"}}}, nil)
	var info apiv1.CommandInfo
	e.call(http.MethodGet, "/commands/"+strconv.Itoa(p.pid), nil, http.StatusOK, &info)
	if !info.Running || !slices.Equal(info.Args, []string{"sleep", "600"}) {
		t.Errorf("sbx sees %+v", info)
	}
	e.call(http.MethodDelete, "/commands/"+strconv.Itoa(p.pid), nil, http.StatusOK, nil)
	if end := p.wait(); end.Status != "signal: killed" {
		t.Errorf("end %s", p.endRaw)
	}

	var own apiv1.CommandInfo
	e.call(http.MethodPost, "/commands", apiv1.StartCommandRequest{Cmd: "echo shared >&2; cat", Stdin: true, Background: true}, http.StatusCreated, &own)
	c := e.envdConnect(map[string]any{"process": selector(own.PID)}, nil)
	c.until(&c.stderr, "shared\n")
	e.envdOK("process.Process/SendInput", map[string]any{"process": selector(own.PID), "input": map[string]any{"stdin": []byte("fed\n")}}, nil, nil)
	e.envdOK("process.Process/CloseStdin", map[string]any{"process": selector(own.PID)}, nil, nil)
	if end := c.wait(); c.stdout.String() != "fed\n" || end.ExitCode != 0 {
		t.Errorf("stdout %q, end %s", c.stdout.String(), c.endRaw)
	}
	if res := e.follow(strconv.Itoa(own.PID)); res.stdout != "fed\n" || *res.end.ExitCode != 0 {
		t.Errorf("sbx's stream: %q, end %+v", res.stdout, res.end)
	}
}

// A short process's stream costs two writes to the network, as the
// agent's own streams do: the headers with the start event, and the end
// event with the end of the stream and of the response.
func TestEnvdShortStartInTwoWrites(t *testing.T) {
	e, ln := recordedEnv(t)
	e.envdStart(map[string]any{"process": map[string]any{"cmd": "true"}}, nil).wait()
	writes := ln.writes()
	if len(writes) != 2 {
		t.Fatalf("%d writes, want 2: %q", len(writes), writes)
	}
	if w := writes[0]; !strings.HasPrefix(w, "HTTP/1.1 200") || !strings.Contains(w, `{"event":{"start":`) {
		t.Errorf("first write %q: want the headers and the start event", w)
	}
	if w := writes[1]; !strings.Contains(w, `{"event":{"end":`) || !strings.HasSuffix(w, "\x02\x00\x00\x00\x02{}\r\n0\r\n\r\n") {
		t.Errorf("last write %q: want the end event and the end of the stream", w)
	}
}

// entry is a filesystem.EntryInfo as the SDKs decode it.
type entry struct {
	Name          string    `json:"name"`
	Type          string    `json:"type"`
	Path          string    `json:"path"`
	Size          string    `json:"size"`
	Mode          uint32    `json:"mode"`
	Permissions   string    `json:"permissions"`
	Owner         string    `json:"owner"`
	Group         string    `json:"group"`
	ModifiedTime  time.Time `json:"modifiedTime"`
	SymlinkTarget *string   `json:"symlinkTarget"`
}

type entryAnswer struct {
	Entry entry `json:"entry"`
}

func TestEnvdStatAndListDir(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.dir, "a.txt")
	mustWrite(t, file, "hello")
	if err := os.MkdirAll(filepath.Join(e.dir, "d", "deeper"), 0o750); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(e.dir, "d", "b.txt"), "")
	if err := os.Symlink("a.txt", filepath.Join(e.dir, "link")); err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}

	status, data := e.envdUnary("filesystem.Filesystem/Stat", map[string]any{"path": file}, nil)
	if status != http.StatusOK || !strings.Contains(string(data), `"size":"5"`) {
		t.Fatalf("stat: %d %s: want the size as a string", status, data)
	}
	var st entryAnswer
	json.Unmarshal(data, &st)
	if got := st.Entry; got.Name != "a.txt" || got.Type != "FILE_TYPE_FILE" || got.Path != file || got.Mode != 0o644 ||
		got.Permissions != "-rw-r--r--" || got.Owner != me.Username || got.Group == "" || time.Since(got.ModifiedTime) > time.Hour || got.SymlinkTarget != nil {
		t.Errorf("stat %s", data)
	}
	e.envdOK("filesystem.Filesystem/Stat", map[string]any{"path": filepath.Join(e.dir, "d")}, &st, nil)
	if got := st.Entry; got.Type != "FILE_TYPE_DIRECTORY" || got.Mode != 0o750 || got.Permissions != "drwxr-x---" {
		t.Errorf("stat of a directory %+v", got)
	}
	e.envdOK("filesystem.Filesystem/Stat", map[string]any{"path": filepath.Join(e.dir, "link")}, &st, nil)
	if got := st.Entry; got.Type != "FILE_TYPE_SYMLINK" || got.SymlinkTarget == nil || *got.SymlinkTarget != "a.txt" {
		t.Errorf("stat of a symlink %+v", got)
	}
	e.envdOK("filesystem.Filesystem/Stat", map[string]any{"path": ""}, &st, nil) // the working directory
	if st.Entry.Path != e.dir {
		t.Errorf("stat of \"\": %+v", st.Entry)
	}
	if isDir(me.HomeDir) { // relative paths are relative to the user's home, as envd has them
		e.envdOK("filesystem.Filesystem/Stat", map[string]any{"path": "."}, &st, nil)
		if st.Entry.Path != me.HomeDir {
			t.Errorf("stat of \".\": %+v, want %s", st.Entry, me.HomeDir)
		}
	}
	e.envdFail("filesystem.Filesystem/Stat", map[string]any{"path": filepath.Join(e.dir, "nope")}, http.StatusNotFound, "not_found", nil)
	e.envdFail("filesystem.Filesystem/Stat", map[string]any{"path": "~other/x"}, http.StatusBadRequest, "invalid_argument", nil)

	paths := func(depth any) []string {
		t.Helper()
		var list struct {
			Entries []entry `json:"entries"`
		}
		e.envdOK("filesystem.Filesystem/ListDir", map[string]any{"path": e.dir, "depth": depth}, &list, nil)
		var out []string
		for _, en := range list.Entries {
			rel, _ := filepath.Rel(e.dir, en.Path)
			out = append(out, rel)
		}
		return out
	}
	if got, want := paths(0), []string{"a.txt", "d", "link"}; !slices.Equal(got, want) {
		t.Errorf("depth 0 (1): %q, want %q", got, want)
	}
	if got, want := paths("2"), []string{"a.txt", "d", "d/b.txt", "d/deeper", "link"}; !slices.Equal(got, want) {
		t.Errorf("depth 2: %q, want %q", got, want)
	}
	e.envdFail("filesystem.Filesystem/ListDir", map[string]any{"path": file}, http.StatusBadRequest, "invalid_argument", nil)
	e.envdFail("filesystem.Filesystem/ListDir", map[string]any{"path": filepath.Join(e.dir, "nope")}, http.StatusNotFound, "not_found", nil)
}

func TestEnvdMakeDirMoveRemove(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.dir, "x", "y")
	var made entryAnswer
	e.envdOK("filesystem.Filesystem/MakeDir", map[string]any{"path": dir}, &made, nil)
	if made.Entry.Path != dir || made.Entry.Type != "FILE_TYPE_DIRECTORY" || !isDir(dir) {
		t.Errorf("made %+v", made.Entry)
	}
	e.envdFail("filesystem.Filesystem/MakeDir", map[string]any{"path": dir}, http.StatusConflict, "already_exists", nil)
	mustWrite(t, filepath.Join(e.dir, "f"), "data")
	e.envdFail("filesystem.Filesystem/MakeDir", map[string]any{"path": filepath.Join(e.dir, "f")}, http.StatusBadRequest, "invalid_argument", nil)

	// Move makes the destination's parents.
	to := filepath.Join(e.dir, "m", "n", "g")
	var moved entryAnswer
	e.envdOK("filesystem.Filesystem/Move", map[string]any{"source": filepath.Join(e.dir, "f"), "destination": to}, &moved, nil)
	if moved.Entry.Path != to || moved.Entry.Name != "g" || moved.Entry.Size != "4" {
		t.Errorf("moved %+v", moved.Entry)
	}
	e.envdFail("filesystem.Filesystem/Move", map[string]any{"source": filepath.Join(e.dir, "f"), "destination": to}, http.StatusNotFound, "not_found", nil)

	e.envdOK("filesystem.Filesystem/Remove", map[string]any{"path": filepath.Join(e.dir, "m")}, nil, nil)
	if _, err := os.Lstat(filepath.Join(e.dir, "m")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removed: %v", err)
	}
	e.envdOK("filesystem.Filesystem/Remove", map[string]any{"path": filepath.Join(e.dir, "m")}, nil, nil) // gone already: fine, as envd has it
	e.envdFail("filesystem.Filesystem/Remove", map[string]any{"path": "/"}, http.StatusBadRequest, "invalid_argument", nil)
}

// watchEvent is a WatchDirResponse's filesystem event.
type watchEvent struct {
	Filesystem *struct {
		Name  string `json:"name"`
		Type  string `json:"type"`
		Entry *entry `json:"entry"`
	} `json:"filesystem"`
}

func TestEnvdWatchDir(t *testing.T) {
	e := newEnv(t)
	w := e.envdOpen("filesystem.Filesystem/WatchDir", map[string]any{"path": e.dir, "recursive": true, "includeEntry": true}, nil)
	if msg, _ := w.next(); string(msg) != `{"start":{}}` {
		t.Fatalf("first message %s", msg)
	}
	// waitFor reads the watch until an event of typ for name, and answers it.
	waitFor := func(w *envdStream, typ, name string) watchEvent {
		t.Helper()
		for {
			msg, ok := w.next()
			if !ok {
				t.Fatalf("the watch ended (%+v) waiting for %s %s", w.end, typ, name)
			}
			var ev watchEvent
			if err := json.Unmarshal(msg, &ev); err != nil || ev.Filesystem == nil {
				t.Fatalf("message %s", msg)
			}
			if ev.Filesystem.Type == typ && ev.Filesystem.Name == name {
				return ev
			}
		}
	}
	mustWrite(t, filepath.Join(e.dir, "f.txt"), "x")
	if ev := waitFor(w, "EVENT_TYPE_CREATE", "f.txt"); ev.Filesystem.Entry == nil || ev.Filesystem.Entry.Type != "FILE_TYPE_FILE" {
		t.Errorf("create without its entry: %+v", ev.Filesystem)
	}
	if err := os.Mkdir(filepath.Join(e.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	waitFor(w, "EVENT_TYPE_CREATE", "sub") // seen once the new directory is watched too
	mustWrite(t, filepath.Join(e.dir, "sub", "g.txt"), "y")
	waitFor(w, "EVENT_TYPE_CREATE", "sub/g.txt")
	if err := os.Remove(filepath.Join(e.dir, "f.txt")); err != nil {
		t.Fatal(err)
	}
	if ev := waitFor(w, "EVENT_TYPE_REMOVE", "f.txt"); ev.Filesystem.Entry != nil {
		t.Errorf("an entry for what is gone: %+v", ev.Filesystem.Entry)
	}

	// protobuf's snake_case name.
	w = e.envdOpen("filesystem.Filesystem/WatchDir", `{"path":"`+e.dir+`","include_entry":true}`, nil)
	w.next()
	mustWrite(t, filepath.Join(e.dir, "h.txt"), "z")
	if ev := waitFor(w, "EVENT_TYPE_CREATE", "h.txt"); ev.Filesystem.Entry == nil {
		t.Errorf("include_entry: no entry")
	}
	// Connect-Timeout-Ms ends a watch (of a directory where nothing happens).
	quiet := filepath.Join(e.dir, "quiet")
	if err := os.Mkdir(quiet, 0o755); err != nil {
		t.Fatal(err)
	}
	w = e.envdOpen("filesystem.Filesystem/WatchDir", map[string]any{"path": quiet}, envdHeaders{"Connect-Timeout-Ms": "50"})
	w.next()
	w.mustEnd("deadline_exceeded")

	e.envdOpen("filesystem.Filesystem/WatchDir", map[string]any{"path": filepath.Join(e.dir, "nope")}, nil).mustEnd("not_found")
	e.envdOpen("filesystem.Filesystem/WatchDir", map[string]any{"path": filepath.Join(e.dir, "sub", "g.txt")}, nil).mustEnd("invalid_argument")
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// envdFilesPost posts to /files with a query.
func (e *env) envdFilesPost(query, contentType string, body []byte, h envdHeaders) (int, []byte) {
	e.t.Helper()
	resp := e.envdPost("/files?"+query, contentType, body, h)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// envdMultipart is a multipart/form-data body of parts named file with
// these (full) filenames and contents, and a part of another name.
func envdMultipart(t *testing.T, files ...[2]string) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("other", "ignored")
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="file"; filename="`+f[0]+`"`)
		h.Set("Content-Type", "application/octet-stream")
		pw, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		pw.Write([]byte(f[1]))
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

type uploaded struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Path string `json:"path"`
}

// filesError is an error of /files.
type filesError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func checkFilesError(t *testing.T, what string, status int, data []byte, want int) {
	t.Helper()
	var fe filesError
	if err := json.Unmarshal(data, &fe); err != nil || status != want || fe.Code != want || fe.Message == "" {
		t.Errorf("%s: %d %s, want %d and the code in the body", what, status, data, want)
	}
}

func TestEnvdFilesUpload(t *testing.T) {
	e := newEnv(t)
	one, two := filepath.Join(e.dir, "up", "one.txt"), filepath.Join(e.dir, "up", "two", "two.bin")
	ct, body := envdMultipart(t, [2]string{one, "1"}, [2]string{two, "\x00\x01"})
	status, data := e.envdFilesPost("", ct, body, envdHeaders{"X-Metadata-Foo": "bar"})
	var files []uploaded
	if err := json.Unmarshal(data, &files); err != nil || status != http.StatusOK {
		t.Fatalf("multipart: %d %s", status, data)
	}
	if want := []uploaded{{"one.txt", "file", one}, {"two.bin", "file", two}}; !slices.Equal(files, want) {
		t.Errorf("uploaded %+v, want %+v", files, want)
	}
	checkFile(t, one, "1")
	checkFile(t, two, "\x00\x01")

	// ?path wins over the filename.
	p := filepath.Join(e.dir, "p.txt")
	ct, body = envdMultipart(t, [2]string{"ignored.txt", "by path"})
	if status, data := e.envdFilesPost("path="+p, ct, body, nil); status != http.StatusOK || !strings.Contains(string(data), p) {
		t.Errorf("multipart to ?path: %d %s", status, data)
	}
	checkFile(t, p, "by path")

	ct, body = envdMultipart(t, [2]string{one, "a"}, [2]string{one, "b"})
	status, data = e.envdFilesPost("", ct, body, nil)
	checkFilesError(t, "one path twice", status, data, http.StatusBadRequest)

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte("zipped"))
	zw.Close()
	z := filepath.Join(e.dir, "z", "z.txt")
	status, data = e.envdFilesPost("path="+z, "application/octet-stream", gz.Bytes(), envdHeaders{"Content-Encoding": "gzip"})
	if err := json.Unmarshal(data, &files); err != nil || status != http.StatusOK || !slices.Equal(files, []uploaded{{"z.txt", "file", z}}) {
		t.Errorf("octet-stream: %d %s", status, data)
	}
	checkFile(t, z, "zipped")
	status, data = e.envdFilesPost("path="+z, "application/octet-stream", []byte("plain"), nil)
	if status != http.StatusOK {
		t.Errorf("octet-stream: %d %s", status, data)
	}
	checkFile(t, z, "plain")

	status, data = e.envdFilesPost("", "application/octet-stream", []byte("x"), nil)
	checkFilesError(t, "octet-stream without a path", status, data, http.StatusBadRequest)
	status, data = e.envdFilesPost("path="+z, "application/octet-stream", []byte("not gzip"), envdHeaders{"Content-Encoding": "gzip"})
	checkFilesError(t, "a bad gzip", status, data, http.StatusBadRequest)
	status, data = e.envdFilesPost("path="+e.dir, "application/octet-stream", []byte("x"), nil)
	checkFilesError(t, "onto a directory", status, data, http.StatusBadRequest)
	status, data = e.envdFilesPost("path="+z+"&username=no-such-user", "application/octet-stream", []byte("x"), nil)
	checkFilesError(t, "an unknown user", status, data, http.StatusUnauthorized)
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	if data, err := os.ReadFile(path); err != nil || string(data) != want {
		t.Errorf("%s: %q, %v; want %q", path, data, err, want)
	}
}

func TestEnvdFilesDownload(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.dir, "a.txt")
	mustWrite(t, file, "contents")
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	get := func(query string) (int, []byte) {
		t.Helper()
		resp := e.request(e.ctx, http.MethodGet, envdPrefix+"/files?"+query, nil)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	// serve checks signatures; the agent takes and ignores them.
	if status, data := get("path=" + file + "&username=" + me.Username + "&signature=v1_abc&signature_expiration=1"); status != http.StatusOK || string(data) != "contents" {
		t.Errorf("download: %d %q", status, data)
	}
	status, data := get("path=" + filepath.Join(e.dir, "nope"))
	checkFilesError(t, "missing", status, data, http.StatusNotFound)
	status, data = get("path=" + e.dir)
	checkFilesError(t, "a directory", status, data, http.StatusBadRequest)
	status, data = get("path=" + file + "&username=no-such-user")
	checkFilesError(t, "an unknown user", status, data, http.StatusUnauthorized)
}

// Processes, directories and files are the Authorization's user's.
func TestEnvdUser(t *testing.T) {
	if os.Getuid() != 0 {
		testenv.Missing(t, "root, to switch users")
	}
	e := newEnv(t)
	p := e.envdStart(map[string]any{"process": map[string]any{"cmd": "id", "args": []string{"-un"}, "cwd": "/"}}, basicAuth("nobody"))
	if p.wait(); p.stdout.String() != "nobody\n" {
		t.Errorf("id -un: %q", p.stdout.String())
	}
	e.envdOpen("process.Process/Start", sh("true"), basicAuth("no-such-user")).mustEnd("unauthenticated")
	e.envdOpen("process.Process/Start", sh("true"), envdHeaders{"Authorization": "Bearer x"}).mustEnd("unauthenticated")
	e.envdFail("filesystem.Filesystem/Stat", map[string]any{"path": e.dir}, http.StatusUnauthorized, "unauthenticated", basicAuth("no-such-user"))

	open := filepath.Join(e.dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	os.Chmod(e.dir, 0o755)
	os.Chmod(filepath.Dir(e.dir), 0o755) // t.TempDir makes both 0700
	var made entryAnswer
	e.envdOK("filesystem.Filesystem/MakeDir", map[string]any{"path": filepath.Join(open, "d")}, &made, basicAuth("nobody"))
	if made.Entry.Owner != "nobody" {
		t.Errorf("made %+v", made.Entry)
	}
	e.envdFail("filesystem.Filesystem/MakeDir", map[string]any{"path": filepath.Join(e.dir, "root-only", "d")}, http.StatusForbidden, "permission_denied", basicAuth("nobody"))
	status, data := e.envdFilesPost("username=nobody&path="+filepath.Join(open, "new", "f"), "application/octet-stream", []byte("x"), nil)
	if status != http.StatusOK {
		t.Fatalf("upload as nobody: %d %s", status, data)
	}
	for _, p := range []string{filepath.Join(open, "new"), filepath.Join(open, "new", "f")} {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil || st.Uid != 65534 {
			t.Errorf("%s: uid %d, %v; want nobody's", p, st.Uid, err)
		}
	}
}

func TestEnvdHealthAndToken(t *testing.T) {
	e := newEnv(t)
	resp, err := http.Get(e.url + envdPrefix + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("health: %d, want 204", resp.StatusCode)
	}
	routes := []string{"GET /files"}
	for _, proc := range []string{
		"process.Process/Start", "process.Process/Connect", "process.Process/List", "process.Process/SendInput",
		"process.Process/SendSignal", "process.Process/CloseStdin", "process.Process/Update",
		"filesystem.Filesystem/Stat", "filesystem.Filesystem/ListDir", "filesystem.Filesystem/MakeDir",
		"filesystem.Filesystem/Move", "filesystem.Filesystem/Remove", "filesystem.Filesystem/WatchDir", "files",
	} {
		routes = append(routes, "POST /"+proc)
	}
	for _, route := range routes {
		method, path, _ := strings.Cut(route, " ")
		req, _ := http.NewRequestWithContext(e.ctx, method, e.url+envdPrefix+path, strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", route, resp.StatusCode)
		}
	}
}

// Requests in another media type than the procedure's are 415s.
func TestEnvdMediaTypes(t *testing.T) {
	e := newEnv(t)
	resp := e.envdPost("/process.Process/List", "application/proto", nil, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("unary as proto: %d", resp.StatusCode)
	}
	resp = e.envdPost("/process.Process/Start", "application/json", []byte("{}"), nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Errorf("stream as JSON: %d", resp.StatusCode)
	}
	e.envdFail("process.Process/List", "{", http.StatusBadRequest, "invalid_argument", nil)
	// A compressed envelope is refused in the end of the stream.
	resp = e.envdPost("/process.Process/Start", "application/connect+json", []byte{1, 0, 0, 0, 2, '{', '}'}, nil)
	s := &envdStream{t: t, resp: resp, br: bufio.NewReader(resp.Body)}
	t.Cleanup(func() { resp.Body.Close() })
	s.mustEnd("internal")
}
