package opensandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx/agentbridge"
	"github.com/sbxdev/sbx/apiv1"
)

// execd as an agentbridge.Remote: a process is a command execd runs from
// a shell line (the argv quoted), its output streamed as server-sent
// events line by line; files are execd's file and directory routes.
// execd has no terminals, stdin (a command's is empty), process list or
// watches (501s naming the provider), signals but an interrupt (TERM, INT and KILL are one), and
// users but by number (and root).
type execd struct {
	http    *http.Client
	base    string            // execd's URL, from the API's endpoint
	headers map[string]string // the endpoint's headers (its access token)
}

var _ agentbridge.Remote = (*execd)(nil)

func unsupported(what string) error {
	return agentbridge.Errorf(http.StatusNotImplemented, "provider opensandbox's execd has no %s", what)
}

// do sends a request to execd; an answer that is not a 2xx is the agent's
// error with its status and execd's message.
func (x *execd) do(ctx context.Context, method, target, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, x.base+target, body)
	if err != nil {
		return nil, err
	}
	for k, v := range x.headers {
		req.Header.Set(k, v)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := x.http.Do(req)
	if err != nil {
		return nil, agentbridge.Errorf(http.StatusBadGateway, "execd does not answer: %v", err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e struct{ Code, Message string }
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		status := resp.StatusCode
		if status >= 500 || status == http.StatusUnauthorized {
			status = http.StatusBadGateway // execd's fault, or serve's token: never the caller's
		}
		return nil, agentbridge.Errorf(status, "execd: %s", msg)
	}
	return resp, nil
}

// call sends a JSON body (when not nil) and decodes the answer into out
// (when not nil).
func (x *execd) call(ctx context.Context, method, target string, body, out any) error {
	var r io.Reader
	ct := ""
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r, ct = bytes.NewReader(data), "application/json"
	}
	resp, err := x.do(ctx, method, target, ct, r)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

func (x *execd) Ready(ctx context.Context) error {
	return x.call(ctx, http.MethodGet, "/ping", nil, nil)
}

// Start runs the command's argv as a shell line through POST /command and
// reads its stream to its init event, which names its PID.
func (x *execd) Start(ctx context.Context, c agentbridge.Command) (agentbridge.Process, error) {
	if c.Pty != nil {
		return nil, unsupported("terminals")
	}
	// execd gives a command no stdin: one asked to keep it open starts
	// with it empty, as a command not asked to does, and Input is a 501.
	body := map[string]any{"command": shellLine(append([]string{c.Program}, c.Args...)), "cwd": c.Cwd, "envs": c.Env,
		"timeout": c.Timeout * 1000, "background": false}
	if c.User != "" {
		uid, gid, ok := strings.Cut(c.User, ":")
		if uid == "root" { // the one name every system has by number
			uid = "0"
		}
		u, err := strconv.ParseUint(uid, 10, 32)
		if err != nil {
			return nil, agentbridge.Errorf(http.StatusBadRequest, "user %q: provider opensandbox's execd takes a user by UID (UID or UID:GID)", c.User)
		}
		body["uid"] = u
		if ok {
			g, err := strconv.ParseUint(gid, 10, 32)
			if err != nil {
				return nil, agentbridge.Errorf(http.StatusBadRequest, "user %q: the group must be a GID", c.User)
			}
			body["gid"] = g
		}
	}
	data, _ := json.Marshal(body)
	resp, err := x.do(context.Background(), http.MethodPost, "/command", "application/json", bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	p := &process{body: resp.Body, r: bufio.NewReader(resp.Body)}
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()
	for {
		ev, err := p.event()
		if err != nil {
			resp.Body.Close()
			return nil, agentbridge.Errorf(http.StatusBadGateway, "execd's stream of the command ended before it started: %v", err)
		}
		if ev.Type == "init" {
			if p.pid, err = strconv.Atoi(ev.Text); err != nil {
				resp.Body.Close()
				return nil, agentbridge.Errorf(http.StatusBadGateway, "execd named the command %q, which is no PID", ev.Text)
			}
			return p, nil
		}
	}
}

// shellLine quotes argv for a POSIX shell.
func shellLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// process is a command's event stream after its init.
type process struct {
	body io.Closer
	r    *bufio.Reader
	pid  int
}

// event is one of execd's stream events.
type event struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Error *struct {
		EValue    string   `json:"evalue"`
		Traceback []string `json:"traceback"`
	} `json:"error"`
}

// event reads the next event: a line of JSON (after "data:", as an SSE
// client reads it, or bare), blank lines between.
func (p *process) event() (event, error) {
	for {
		line, err := p.r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return event{}, err
			}
			continue
		}
		line = bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data:")))
		var ev event
		if jerr := json.Unmarshal(line, &ev); jerr != nil {
			return event{}, fmt.Errorf("a malformed event: %v", jerr)
		}
		return ev, nil
	}
}

func (p *process) PID() int     { return p.pid }
func (p *process) Close() error { return p.body.Close() }

func (p *process) Next() (agentbridge.Event, error) {
	for {
		ev, err := p.event()
		if err != nil {
			return agentbridge.Event{}, err
		}
		switch ev.Type {
		case "stdout":
			return agentbridge.Event{Stdout: []byte(ev.Text + "\n")}, nil
		case "stderr":
			return agentbridge.Event{Stderr: []byte(ev.Text + "\n")}, nil
		case "execution_complete":
			return agentbridge.Event{End: &agentbridge.End{}}, nil
		case "error":
			return agentbridge.Event{End: endOf(ev)}, nil
		} // ping, and what else execd may send
	}
}

// endOf reads a failed command's end: its exit code in evalue, and a
// signal's name from the first line of its traceback ("signal: KILL").
func endOf(ev event) *agentbridge.End {
	end := &agentbridge.End{ExitCode: -1}
	if ev.Error == nil {
		return end
	}
	if n, err := strconv.Atoi(ev.Error.EValue); err == nil {
		end.ExitCode = n
	}
	if len(ev.Error.Traceback) > 0 {
		if s, ok := strings.CutPrefix(ev.Error.Traceback[0], "signal: "); ok {
			end.Signal, _, _ = strings.Cut(s, " ")
		}
	}
	return end
}

func (x *execd) Attach(ctx context.Context, pid int) (agentbridge.Process, error) {
	return nil, unsupported("way to follow a command it started for another client")
}

// Processes answers none: execd lists no commands.
func (x *execd) Processes(ctx context.Context) ([]apiv1.CommandInfo, error) { return nil, nil }

var _ agentbridge.Finder = (*execd)(nil)

// Find answers execd's status of the command whose ID is pid.
func (x *execd) Find(ctx context.Context, pid int) (apiv1.CommandInfo, error) {
	var st struct {
		Content    string     `json:"content"`
		Running    bool       `json:"running"`
		ExitCode   *int       `json:"exit_code"`
		StartedAt  time.Time  `json:"started_at"`
		FinishedAt *time.Time `json:"finished_at"`
	}
	if err := x.call(ctx, http.MethodGet, "/command/status/"+strconv.Itoa(pid), nil, &st); err != nil {
		return apiv1.CommandInfo{}, err
	}
	return apiv1.CommandInfo{PID: pid, Cmd: st.Content, Running: st.Running, ExitCode: st.ExitCode, StartedAt: st.StartedAt, EndedAt: st.FinishedAt}, nil
}

func (x *execd) Input(ctx context.Context, pid int, data []byte, pty bool) error {
	return unsupported("stdin for commands")
}

func (x *execd) CloseStdin(ctx context.Context, pid int) error {
	return unsupported("stdin for commands")
}

func (x *execd) Resize(ctx context.Context, pid int, size apiv1.PtySize) error {
	return unsupported("terminals")
}

// Signal interrupts the command: execd's one way to end it.
func (x *execd) Signal(ctx context.Context, pid int, signal string) error {
	switch strings.TrimPrefix(strings.ToUpper(signal), "SIG") {
	case "TERM", "INT", "KILL", "15", "2", "9":
	default:
		return agentbridge.Errorf(http.StatusBadRequest, "signal %q: provider opensandbox's execd only interrupts a command (TERM, INT or KILL)", signal)
	}
	return x.call(ctx, http.MethodDelete, "/command?"+url.Values{"id": {strconv.Itoa(pid)}}.Encode(), nil, nil)
}

func (x *execd) Read(ctx context.Context, p string) (io.ReadCloser, error) {
	resp, err := x.do(ctx, http.MethodGet, "/files/download?"+url.Values{"path": {p}}.Encode(), "", nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// Write uploads a file as a pair of parts: its metadata (its path, and
// user as its owner), then its contents.
func (x *execd) Write(ctx context.Context, p, user string, body io.Reader) error {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		meta, _ := json.Marshal(map[string]string{"path": p, "owner": user})
		part, err := mw.CreateFormField("metadata")
		if err == nil {
			_, err = part.Write(meta)
		}
		if err == nil {
			part, err = mw.CreateFormFile("file", path.Base(p))
		}
		if err == nil {
			_, err = io.Copy(part, body)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	resp, err := x.do(ctx, http.MethodPost, "/files/upload", mw.FormDataContentType(), pr)
	pr.Close()
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// fileInfo is execd's FileInfo.
type fileInfo struct {
	Path       string    `json:"path"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modified_at"`
	Mode       int       `json:"mode"` // the octal digits as a decimal number: 644
}

func (f fileInfo) info() apiv1.EntryInfo {
	mode, _ := strconv.ParseUint(strconv.Itoa(f.Mode), 8, 32)
	out := apiv1.EntryInfo{Name: path.Base(f.Path), Path: f.Path, Size: f.Size, Mode: fmt.Sprintf("%04o", mode), ModTime: f.ModifiedAt, Type: "other"}
	switch f.Type {
	case "file", "symlink":
		out.Type = f.Type
	case "directory":
		out.Type = "dir"
	}
	return out
}

func (x *execd) Stat(ctx context.Context, p, user string) (apiv1.EntryInfo, error) {
	var out map[string]fileInfo
	if err := x.call(ctx, http.MethodGet, "/files/info?"+url.Values{"path": {p}}.Encode(), nil, &out); err != nil {
		return apiv1.EntryInfo{}, err
	}
	f, ok := out[p]
	if !ok {
		return apiv1.EntryInfo{}, agentbridge.Errorf(http.StatusBadGateway, "execd answered no information of %s", p)
	}
	return f.info(), nil
}

func (x *execd) List(ctx context.Context, p string, depth int) ([]apiv1.EntryInfo, error) {
	var out []fileInfo
	q := url.Values{"path": {p}, "depth": {strconv.Itoa(depth)}}
	if err := x.call(ctx, http.MethodGet, "/directories/list?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	items := make([]apiv1.EntryInfo, 0, len(out))
	for _, f := range out {
		items = append(items, f.info())
	}
	return items, nil
}

func (x *execd) MakeDir(ctx context.Context, p, user string) (bool, error) {
	if info, err := x.Stat(ctx, p, user); err == nil {
		return info.Type == "dir", nil // what is not one is the bridge's conflict
	}
	return false, x.call(ctx, http.MethodPost, "/directories", map[string]map[string]string{p: {"owner": user}}, nil)
}

func (x *execd) Move(ctx context.Context, from, to string) error {
	return x.call(ctx, http.MethodPost, "/files/mv", []map[string]string{{"src": from, "dest": to}}, nil)
}

// Remove removes a directory (recursively) or a file, as execd has a
// route for each.
func (x *execd) Remove(ctx context.Context, p string) error {
	info, err := x.Stat(ctx, p, "")
	if err != nil {
		return err
	}
	route := "/files"
	if info.Type == "dir" {
		route = "/directories"
	}
	return x.call(ctx, http.MethodDelete, route+"?"+url.Values{"path": {p}}.Encode(), nil, nil)
}

func (x *execd) Watch(ctx context.Context, p string, recursive bool) (agentbridge.Watch, error) {
	return nil, unsupported("file watches")
}
