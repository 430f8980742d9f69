package e2b

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/sbxdev/sbx/agentbridge"
	"github.com/sbxdev/sbx/apiv1"
)

// envd as an agentbridge.Remote: processes are envd's process service
// (Start and Connect streams, List, SendInput, CloseStdin, SendSignal,
// Update), files its filesystem service and /files. envd's errors become
// the agent's statuses (rpcStatus).

// envdRemote is one sandbox's envd as a bridge drives it.
type envdRemote struct{ e *envd }

var _ agentbridge.Remote = envdRemote{}

// rpcStatus is the agent's status for each of envd's codes.
var rpcStatus = map[string]int{
	"invalid_argument": 400, "failed_precondition": 400, "out_of_range": 400, "unauthenticated": 400,
	"permission_denied": 403, "not_found": 404, "already_exists": 409, "resource_exhausted": 507,
	"deadline_exceeded": 504, "unavailable": 502, "canceled": 502,
}

// agentError is envd's error as the agent's.
func agentError(err error) error {
	var re *rpcError
	if !errors.As(err, &re) {
		return err
	}
	status, ok := rpcStatus[re.Code]
	if !ok {
		status = http.StatusBadGateway
	}
	return agentbridge.Errorf(status, "envd: %s", re.Message)
}

func (r envdRemote) unary(ctx context.Context, procedure, user string, in, out any) error {
	return agentError(r.e.unary(ctx, procedure, user, in, out))
}

func (r envdRemote) Ready(ctx context.Context) error {
	req, err := r.e.request(ctx, http.MethodGet, "/health", "", nil)
	if err != nil {
		return err
	}
	resp, err := r.e.http.Do(req)
	if err != nil {
		return agentError(r.e.unreachable(err))
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return agentbridge.Errorf(http.StatusServiceUnavailable, "envd of sandbox %s answers %s", r.e.id, resp.Status)
	}
	return nil
}

// Start starts an envd process; its stream, not ctx, lives as long as it.
func (r envdRemote) Start(ctx context.Context, c agentbridge.Command) (agentbridge.Process, error) {
	req := map[string]any{
		"process": map[string]any{"cmd": c.Program, "args": nonNil(c.Args), "envs": c.Env, "cwd": c.Cwd},
		"stdin":   c.Stdin,
	}
	if c.Tag != "" {
		req["tag"] = c.Tag
	}
	if c.Pty != nil {
		req["pty"] = map[string]any{"size": map[string]any{"cols": c.Pty.Cols, "rows": c.Pty.Rows}}
	}
	return r.open(ctx, "process.Process/Start", c.User, req, time.Duration(c.Timeout)*time.Second)
}

// Attach follows a process through envd's Connect.
func (r envdRemote) Attach(ctx context.Context, pid int) (agentbridge.Process, error) {
	return r.open(ctx, "process.Process/Connect", "", map[string]any{"process": selector(pid)}, 0)
}

// open opens a process's stream and reads it to its start event.
func (r envdRemote) open(ctx context.Context, procedure, user string, req any, timeout time.Duration) (agentbridge.Process, error) {
	s, err := r.e.stream(context.Background(), procedure, user, req, timeout)
	if err != nil {
		return nil, agentError(err)
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	for {
		msg, err := s.Next()
		if err != nil {
			s.Close()
			if err == io.EOF {
				err = agentbridge.Errorf(http.StatusBadGateway, "envd ended the process's stream before it started")
			}
			return nil, agentError(err)
		}
		var ev processEvent
		if err := json.Unmarshal(msg, &ev); err != nil {
			s.Close()
			return nil, err
		}
		if ev.Event.Start != nil {
			return &process{s: s, pid: ev.Event.Start.PID}, nil
		}
	}
}

// processEvent is a message of envd's Start and Connect streams.
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
		End *struct {
			ExitCode int    `json:"exitCode"`
			Exited   bool   `json:"exited"`
			Status   string `json:"status"`
			Error    string `json:"error"`
		} `json:"end"`
	} `json:"event"`
}

// process is an envd process's stream after its start event.
type process struct {
	s   *envdStream
	pid int
}

func (p *process) PID() int     { return p.pid }
func (p *process) Close() error { return p.s.Close() }

func (p *process) Next() (agentbridge.Event, error) {
	for {
		msg, err := p.s.Next()
		if err != nil {
			return agentbridge.Event{}, err
		}
		var ev processEvent
		if json.Unmarshal(msg, &ev) != nil {
			continue
		}
		switch e := ev.Event; {
		case e.Data != nil:
			return agentbridge.Event{Stdout: append(e.Data.Stdout, e.Data.Pty...), Stderr: e.Data.Stderr}, nil
		case e.End != nil:
			end := agentbridge.End{ExitCode: e.End.ExitCode}
			if !e.End.Exited {
				end = agentbridge.End{ExitCode: -1, Signal: signalOf(e.End.Status)}
				if e.End.Error != e.End.Status { // envd repeats the status as the error
					end.Error = e.End.Error
				}
			}
			return agentbridge.Event{End: &end}, nil
		} // keepalives
	}
}

// signalOf reads the signal in a status as Go's os.ProcessState says it
// ("signal: killed").
func signalOf(status string) string {
	names := map[string]string{"killed": "KILL", "terminated": "TERM", "interrupt": "INT", "hangup": "HUP", "quit": "QUIT",
		"aborted": "ABRT", "broken pipe": "PIPE", "user defined signal 1": "USR1", "user defined signal 2": "USR2"}
	if s, ok := strings.CutPrefix(status, "signal: "); ok {
		if n, ok := names[s]; ok {
			return n
		}
		return strings.ToUpper(s)
	}
	return ""
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// selector names a process to envd.
func selector(pid int) map[string]any { return map[string]any{"pid": pid} }

func (r envdRemote) Processes(ctx context.Context) ([]apiv1.CommandInfo, error) {
	var out struct {
		Processes []struct {
			PID    int    `json:"pid"`
			Tag    string `json:"tag"`
			Config struct {
				Cmd  string   `json:"cmd"`
				Args []string `json:"args"`
				Cwd  string   `json:"cwd"`
			} `json:"config"`
		} `json:"processes"`
	}
	if err := r.unary(ctx, "process.Process/List", "", struct{}{}, &out); err != nil {
		return nil, err
	}
	infos := make([]apiv1.CommandInfo, 0, len(out.Processes))
	for _, l := range out.Processes {
		infos = append(infos, apiv1.CommandInfo{PID: l.PID, Tag: l.Tag, Args: append([]string{l.Config.Cmd}, l.Config.Args...), Cwd: l.Config.Cwd, Running: true})
	}
	return infos, nil
}

func (r envdRemote) Input(ctx context.Context, pid int, data []byte, pty bool) error {
	field := "stdin"
	if pty {
		field = "pty"
	}
	return r.unary(ctx, "process.Process/SendInput", "", map[string]any{"process": selector(pid),
		"input": map[string]string{field: base64.StdEncoding.EncodeToString(data)}}, nil)
}

func (r envdRemote) CloseStdin(ctx context.Context, pid int) error {
	return r.unary(ctx, "process.Process/CloseStdin", "", map[string]any{"process": selector(pid)}, nil)
}

// envdSignals are the signals envd sends, by the names and numbers a
// SignalRequest may give.
var envdSignals = map[string]string{"TERM": "SIGNAL_SIGTERM", "SIGTERM": "SIGNAL_SIGTERM", "15": "SIGNAL_SIGTERM",
	"KILL": "SIGNAL_SIGKILL", "SIGKILL": "SIGNAL_SIGKILL", "9": "SIGNAL_SIGKILL"}

func (r envdRemote) Signal(ctx context.Context, pid int, signal string) error {
	sig, ok := envdSignals[strings.ToUpper(signal)]
	if !ok {
		return agentbridge.Errorf(http.StatusBadRequest, "signal %q: provider e2b's envd sends only TERM and KILL", signal)
	}
	return r.unary(ctx, "process.Process/SendSignal", "", map[string]any{"process": selector(pid), "signal": sig}, nil)
}

func (r envdRemote) Resize(ctx context.Context, pid int, s apiv1.PtySize) error {
	return r.unary(ctx, "process.Process/Update", "", map[string]any{"process": selector(pid),
		"pty": map[string]any{"size": map[string]any{"cols": s.Cols, "rows": s.Rows}}}, nil)
}

func (r envdRemote) Read(ctx context.Context, p string) (io.ReadCloser, error) {
	resp, err := r.e.download(ctx, p, "")
	if err != nil {
		return nil, agentError(err)
	}
	return resp.Body, nil
}

func (r envdRemote) Write(ctx context.Context, p, user string, body io.Reader) error {
	return agentError(r.e.upload(ctx, p, user, body))
}

// entry is envd's EntryInfo.
type entry struct {
	Name          string     `json:"name"`
	Type          string     `json:"type"`
	Path          string     `json:"path"`
	Size          int64      `json:"size,string"`
	Mode          uint32     `json:"mode"`
	ModifiedTime  *time.Time `json:"modifiedTime"`
	SymlinkTarget *string    `json:"symlinkTarget"`
}

func (e *entry) info() apiv1.EntryInfo {
	out := apiv1.EntryInfo{Name: e.Name, Path: e.Path, Size: e.Size, Mode: fmt.Sprintf("%04o", e.Mode&0o7777), Type: "other"}
	switch {
	case e.SymlinkTarget != nil && *e.SymlinkTarget != "":
		out.Type, out.Target = "symlink", *e.SymlinkTarget
	case e.Type == "FILE_TYPE_FILE":
		out.Type = "file"
	case e.Type == "FILE_TYPE_DIRECTORY":
		out.Type = "dir"
	}
	if e.ModifiedTime != nil {
		out.ModTime = *e.ModifiedTime
	}
	return out
}

func (r envdRemote) Stat(ctx context.Context, p, user string) (apiv1.EntryInfo, error) {
	var out struct {
		Entry *entry `json:"entry"`
	}
	if err := r.unary(ctx, "filesystem.Filesystem/Stat", user, map[string]string{"path": p}, &out); err != nil {
		return apiv1.EntryInfo{}, err
	}
	if out.Entry == nil {
		return apiv1.EntryInfo{}, agentbridge.Errorf(http.StatusBadGateway, "envd answered no entry for %s", p)
	}
	return out.Entry.info(), nil
}

func (r envdRemote) List(ctx context.Context, p string, depth int) ([]apiv1.EntryInfo, error) {
	var out struct {
		Entries []*entry `json:"entries"`
	}
	if err := r.unary(ctx, "filesystem.Filesystem/ListDir", "", map[string]any{"path": p, "depth": depth}, &out); err != nil {
		return nil, err
	}
	items := make([]apiv1.EntryInfo, 0, len(out.Entries))
	for _, e := range out.Entries {
		items = append(items, e.info())
	}
	return items, nil
}

func (r envdRemote) MakeDir(ctx context.Context, p, user string) (bool, error) {
	err := r.e.unary(ctx, "filesystem.Filesystem/MakeDir", user, map[string]string{"path": p}, nil)
	var re *rpcError
	if errors.As(err, &re) && re.Code == "already_exists" {
		return true, nil
	}
	return false, agentError(err)
}

func (r envdRemote) Move(ctx context.Context, from, to string) error {
	return r.unary(ctx, "filesystem.Filesystem/Move", "", map[string]string{"source": from, "destination": to}, nil)
}

func (r envdRemote) Remove(ctx context.Context, p string) error {
	return r.unary(ctx, "filesystem.Filesystem/Remove", "", map[string]string{"path": p}, nil)
}

// watchEvents is the FileEvent type of each of envd's event types.
var watchEvents = map[string]string{
	"EVENT_TYPE_CREATE": "create", "EVENT_TYPE_WRITE": "write", "EVENT_TYPE_REMOVE": "remove",
	"EVENT_TYPE_RENAME": "rename", "EVENT_TYPE_CHMOD": "chmod",
}

func (r envdRemote) Watch(ctx context.Context, p string, recursive bool) (agentbridge.Watch, error) {
	s, err := r.e.stream(ctx, "filesystem.Filesystem/WatchDir", "", map[string]any{"path": p, "recursive": recursive}, 0)
	if err != nil {
		return nil, agentError(err)
	}
	return &watch{s: s, dir: p}, nil
}

// watch is envd's WatchDir stream.
type watch struct {
	s   *envdStream
	dir string
}

func (w *watch) Close() error { return w.s.Close() }

func (w *watch) Next() (apiv1.FileEvent, error) {
	for {
		msg, err := w.s.Next()
		if err != nil {
			return apiv1.FileEvent{}, err
		}
		var ev struct {
			Filesystem *struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"filesystem"`
		}
		if json.Unmarshal(msg, &ev) == nil && ev.Filesystem != nil {
			return apiv1.FileEvent{Type: watchEvents[ev.Filesystem.Type], Path: path.Join(w.dir, ev.Filesystem.Name), At: time.Now().UTC()}, nil
		}
	}
}
