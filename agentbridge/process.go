package agentbridge

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/sbxdev/sbx/apiv1"
)

// Commands and terminals as the Remote's processes. The bridge reads each
// process it starts to its end in the background, keeping its output (the
// last maxOutput bytes) for whoever streams or attaches, and its end; the
// daemon's other processes are found through Processes and followed
// through Attach.

// maxOutput bounds the output the bridge keeps of one process.
const maxOutput = 4 << 20

// proc is a process the bridge follows.
type proc struct {
	mu    sync.Mutex
	info  apiv1.CommandInfo
	out   []apiv1.CommandEvent // stdout and stderr events, oldest first
	size  int                  // the bytes out holds
	first int                  // the index of out[0] among every event
	more  chan struct{}        // closed and replaced when out grows or the process ends
	done  chan struct{}        // closed when it ended
	err   string               // why it ended, other than by exiting (a timeout)
}

func newProc(info apiv1.CommandInfo) *proc {
	return &proc{info: info, more: make(chan struct{}), done: make(chan struct{})}
}

// start starts a process and follows it.
func (b *Bridge) start(ctx context.Context, c Command, info apiv1.CommandInfo) (*proc, error) {
	if c.Tag != "" {
		if p, _ := b.find(c.Tag); p != nil && p.running() {
			return nil, Errorf(http.StatusConflict, "a running command is tagged %s", c.Tag)
		}
	}
	begun := time.Now() // before the daemon's timer of its timeout starts
	rp, err := b.remote.Start(ctx, c)
	if err != nil {
		return nil, err
	}
	p := newProc(info)
	p.info.PID, p.info.Tag, p.info.Running, p.info.StartedAt, p.info.Pty = rp.PID(), c.Tag, true, time.Now().UTC(), c.Pty != nil
	b.mu.Lock()
	b.procs[p.info.PID] = p
	b.mu.Unlock()
	go func() {
		defer context.AfterFunc(b.ctx, func() { rp.Close() })()
		p.follow(rp, begun, time.Duration(c.Timeout)*time.Second)
		b.forgetEnded(p.info.PID)
	}()
	return p, nil
}

// follow reads a process's events to its end into p; timeout, when not
// zero, names the end of one that a KILL ended that long after begun.
func (p *proc) follow(rp Process, begun time.Time, timeout time.Duration) {
	defer rp.Close()
	for {
		ev, err := rp.Next()
		switch {
		case err != nil:
			why := "the daemon's stream of the process broke: " + err.Error()
			if err == io.EOF {
				why = "the daemon's stream of the process ended without its end"
			}
			p.end(End{ExitCode: -1, Error: why})
			return
		case ev.End != nil:
			end := *ev.End
			if timeout > 0 && end.Signal == "KILL" && end.Error == "" && time.Since(begun) >= timeout {
				end.Error = "timed out after " + timeout.String()
			}
			p.end(end)
			return
		}
		p.add("stdout", ev.Stdout)
		p.add("stderr", ev.Stderr)
	}
}

// forgetEnded remembers pid among the last maxEnded ended processes.
func (b *Bridge) forgetEnded(pid int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endedPIDs = append(b.endedPIDs, pid)
	for len(b.endedPIDs) > maxEnded {
		delete(b.procs, b.endedPIDs[0])
		b.endedPIDs = b.endedPIDs[1:]
	}
}

func (p *proc) add(typ string, data []byte) {
	if len(data) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out = append(p.out, apiv1.CommandEvent{Type: typ, Data: data})
	p.size += len(data)
	for p.size > maxOutput && len(p.out) > 1 {
		p.size -= len(p.out[0].Data)
		p.out, p.first = p.out[1:], p.first+1
	}
	close(p.more)
	p.more = make(chan struct{})
}

func (p *proc) end(e End) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now().UTC()
	code := e.ExitCode
	p.info.Running, p.info.ExitCode, p.info.Signal, p.info.EndedAt, p.err = false, &code, e.Signal, &now, e.Error
	close(p.more)
	p.more = make(chan struct{})
	close(p.done)
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info.Running
}

func (p *proc) snapshot() apiv1.CommandInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info
}

// since returns the events from index i on (those dropped meanwhile
// skipped), the index after them, a channel closed when there is more, and
// whether the process ended.
func (p *proc) since(i int) ([]apiv1.CommandEvent, int, <-chan struct{}, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i = max(i, p.first)
	evs := slices.Clone(p.out[i-p.first:])
	return evs, p.first + len(p.out), p.more, !p.info.Running
}

// endEvent is the last event of a process's stream.
func (p *proc) endEvent() apiv1.CommandEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return apiv1.CommandEvent{Type: "end", ExitCode: p.info.ExitCode, Signal: p.info.Signal, Error: p.err}
}

// output is what p keeps of its output, stdout and stderr together.
func (p *proc) output() []byte {
	evs, _, _, _ := p.since(0)
	var out []byte
	for _, ev := range evs {
		out = append(out, ev.Data...)
	}
	return out
}

// stream writes p's events as NDJSON from the first it keeps, then live,
// then its end, until the client leaves.
func (p *proc) stream(ctx context.Context, w http.ResponseWriter, start bool) {
	w.Header().Set("Content-Type", apiv1.NDJSON)
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	if start {
		info := p.snapshot()
		enc.Encode(apiv1.CommandEvent{Type: "start", PID: info.PID, Tag: info.Tag})
	}
	flush(w)
	for i := 0; ; {
		evs, next, more, ended := p.since(i)
		for _, ev := range evs {
			enc.Encode(ev)
		}
		if len(evs) > 0 {
			flush(w)
		}
		if ended {
			enc.Encode(p.endEvent())
			flush(w)
			return
		}
		i = next
		select {
		case <-more:
		case <-ctx.Done():
			return
		}
	}
}

// tagPattern is what a tag may be (apiv1.StartCommandRequest's).
var tagPattern = regexp.MustCompile(`^([A-Za-z0-9_-][A-Za-z0-9._-]{0,63}|\.[A-Za-z0-9_-][A-Za-z0-9._-]{0,62}|\.\.[A-Za-z0-9._-]{1,62})$`)

func checkTag(tag string) error {
	if tag != "" && !tagPattern.MatchString(tag) {
		return Errorf(http.StatusBadRequest, "tag %q must be 1 to 64 letters, digits, '.', '_' and '-', but not . or ..", tag)
	}
	return nil
}

// postCommand starts a command: its stream to its end, or, in the
// background, 201 and its CommandInfo. A command line runs under bash -l -c.
func (b *Bridge) postCommand(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.StartCommandRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	c := Command{User: req.User, Env: req.Env, Cwd: req.Cwd, Tag: req.Tag, Stdin: req.Stdin, Timeout: req.Timeout}
	switch {
	case (req.Cmd == "") == (len(req.Args) == 0):
		return Errorf(http.StatusBadRequest, "give exactly one of cmd and args")
	case req.Timeout < 0:
		return Errorf(http.StatusBadRequest, "timeout must not be negative")
	case len(req.Args) == 1 && req.Args[0] == apiv1.SFTPServer:
		return Errorf(http.StatusNotImplemented, "provider %s runs no sbx agent in its sandboxes, so no SFTP server", b.name)
	case req.Cmd != "":
		c.Program, c.Args = "/bin/bash", []string{"-l", "-c", req.Cmd}
	default:
		c.Program, c.Args = req.Args[0], req.Args[1:]
	}
	if err := checkTag(req.Tag); err != nil {
		return err
	}
	p, err := b.start(r.Context(), c, apiv1.CommandInfo{Cmd: req.Cmd, Args: req.Args, Cwd: req.Cwd, User: req.User})
	if err != nil {
		return err
	}
	if req.Background {
		writeJSON(w, http.StatusCreated, p.snapshot())
		return nil
	}
	p.stream(r.Context(), w, true)
	return nil
}

// run runs a program as user to its end; a failure is a 400 with its output.
func (b *Bridge) run(ctx context.Context, user string, args ...string) error {
	p, err := b.start(ctx, Command{User: user, Program: args[0], Args: args[1:], Timeout: 60}, apiv1.CommandInfo{Args: args})
	if err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if info := p.snapshot(); info.ExitCode == nil || *info.ExitCode != 0 {
		return Errorf(http.StatusBadRequest, "%s: %s", strings.Join(args, " "), strings.TrimSpace(string(p.output())))
	}
	return nil
}

// listCommands lists what the bridge started and what else the daemon runs.
func (b *Bridge) listCommands(w http.ResponseWriter, r *http.Request) error {
	running, err := b.remote.Processes(r.Context())
	if err != nil {
		return err
	}
	b.mu.Lock()
	procs := slices.Collect(maps.Values(b.procs))
	b.mu.Unlock()
	list := apiv1.CommandList{Items: []apiv1.CommandInfo{}}
	seen := map[int]bool{}
	for _, p := range procs {
		info := p.snapshot()
		seen[info.PID] = true
		list.Items = append(list.Items, info)
	}
	for _, info := range running {
		if !seen[info.PID] {
			list.Items = append(list.Items, info)
		}
	}
	slices.SortFunc(list.Items, func(a, b apiv1.CommandInfo) int { return a.PID - b.PID })
	writeJSON(w, http.StatusOK, list)
	return nil
}

// find is the process a ref (a PID or a tag) names among the bridge's own:
// the running one of a tag before an ended one.
func (b *Bridge) find(ref string) (*proc, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if pid, err := strconv.Atoi(ref); err == nil {
		return b.procs[pid], pid
	}
	var found *proc
	for _, p := range b.procs {
		if p.info.Tag == ref && (found == nil || p.info.Running) {
			found = p
		}
	}
	return found, 0
}

// lookup is the process ref names: the bridge's own (p), else one the
// daemon runs (info).
func (b *Bridge) lookup(ctx context.Context, ref string) (*proc, apiv1.CommandInfo, error) {
	if p, _ := b.find(ref); p != nil {
		return p, p.snapshot(), nil
	}
	running, err := b.remote.Processes(ctx)
	if err != nil {
		return nil, apiv1.CommandInfo{}, err
	}
	for _, info := range running {
		if strconv.Itoa(info.PID) == ref || (info.Tag != "" && info.Tag == ref) {
			return nil, info, nil
		}
	}
	if f, ok := b.remote.(Finder); ok {
		if pid, err := strconv.Atoi(ref); err == nil {
			info, err := f.Find(ctx, pid)
			return nil, info, err
		}
	}
	return nil, apiv1.CommandInfo{}, Errorf(http.StatusNotFound, "no command %s", ref)
}

func (b *Bridge) getCommand(w http.ResponseWriter, r *http.Request) error {
	_, info, err := b.lookup(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// streamCommand streams a command's output: a process of the bridge's
// from what it keeps, another from now on.
func (b *Bridge) streamCommand(w http.ResponseWriter, r *http.Request) error {
	p, info, err := b.lookup(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	if p == nil {
		rp, err := b.remote.Attach(r.Context(), info.PID)
		if err != nil {
			return err
		}
		p = newProc(info)
		go p.follow(rp, time.Now(), 0)
		defer rp.Close()
	}
	p.stream(r.Context(), w, false)
	return nil
}

// running is the process ref names, which must run: the bridge's own or
// nil, and its PID.
func (b *Bridge) running(ctx context.Context, ref string) (*proc, int, error) {
	p, info, err := b.lookup(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	if !info.Running {
		return nil, 0, Errorf(http.StatusConflict, "command %d has ended", info.PID)
	}
	return p, info.PID, nil
}

// writeStdin sends the body to a command's stdin (a terminal's), in
// pieces of at most 1 MiB.
func (b *Bridge) writeStdin(w http.ResponseWriter, r *http.Request) error {
	p, pid, err := b.running(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	pty := p != nil && p.snapshot().Pty
	buf := make([]byte, 1<<20)
	for {
		n, rerr := io.ReadFull(r.Body, buf)
		if n > 0 {
			if err := b.remote.Input(r.Context(), pid, buf[:n], pty); err != nil {
				return err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return Errorf(http.StatusBadRequest, "reading the input: %v", rerr)
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (b *Bridge) closeStdin(w http.ResponseWriter, r *http.Request) error {
	_, pid, err := b.running(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := b.remote.CloseStdin(r.Context(), pid); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (b *Bridge) signalCommand(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.SignalRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	return b.signal(w, r, req.Signal)
}

func (b *Bridge) killCommand(w http.ResponseWriter, r *http.Request) error {
	return b.signal(w, r, "KILL")
}

// signal sends a signal and answers the command as it is a moment later
// (ended, when it ended within a second).
func (b *Bridge) signal(w http.ResponseWriter, r *http.Request, sig string) error {
	p, pid, err := b.running(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := b.remote.Signal(r.Context(), pid, sig); err != nil {
		return err
	}
	info := apiv1.CommandInfo{PID: pid, Running: true}
	if p != nil {
		select {
		case <-p.done:
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
		info = p.snapshot()
	}
	writeJSON(w, http.StatusOK, info)
	return nil
}

// postPty starts a terminal: a login shell, or cmd under bash.
func (b *Bridge) postPty(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.StartPtyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	size := apiv1.PtySize{Cols: req.Cols, Rows: req.Rows}
	if err := checkSize(size); err != nil {
		return err
	}
	if err := checkTag(req.Tag); err != nil {
		return err
	}
	env := map[string]string{"TERM": "xterm-256color"}
	maps.Copy(env, req.Env)
	c := Command{User: req.User, Program: "/bin/bash", Args: []string{"-i", "-l"}, Env: env, Cwd: req.Cwd, Tag: req.Tag, Stdin: true, Pty: &size}
	if req.Cmd != "" {
		c.Args = []string{"-l", "-c", req.Cmd}
	}
	p, err := b.start(r.Context(), c, apiv1.CommandInfo{Cmd: req.Cmd, Cwd: req.Cwd, User: req.User})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, p.snapshot())
	return nil
}

func checkSize(s apiv1.PtySize) error {
	if s.Cols < 1 || s.Cols > 1000 || s.Rows < 1 || s.Rows > 1000 {
		return Errorf(http.StatusBadRequest, "cols and rows must be from 1 to 1000")
	}
	return nil
}

func (b *Bridge) resizePty(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.PtySize
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	if err := checkSize(req); err != nil {
		return err
	}
	_, pid, err := b.running(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := b.remote.Resize(r.Context(), pid, req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// attachPty connects a WebSocket to a terminal the bridge started, as the
// agent does: its output kept, then live, as binary messages; binary
// messages back are its input, text messages PtyControl.
func (b *Bridge) attachPty(w http.ResponseWriter, r *http.Request) error {
	p, _ := b.find(r.PathValue("ref"))
	if p == nil || !p.snapshot().Pty {
		return Errorf(http.StatusNotFound, "no terminal %s", r.PathValue("ref"))
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, Subprotocols: []string{apiv1.PtyProtocol}})
	if err != nil {
		return nil // Accept has answered
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	pid := p.snapshot().PID
	go func() {
		defer cancel()
		for {
			typ, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if typ == websocket.MessageBinary {
				b.remote.Input(ctx, pid, data, true)
				continue
			}
			var ctl apiv1.PtyControl
			if json.Unmarshal(data, &ctl) == nil && ctl.Type == "resize" && checkSize(apiv1.PtySize{Cols: ctl.Cols, Rows: ctl.Rows}) == nil {
				b.remote.Resize(ctx, pid, apiv1.PtySize{Cols: ctl.Cols, Rows: ctl.Rows})
			}
		}
	}()
	for i := 0; ; {
		evs, next, more, ended := p.since(i)
		var msg []byte
		for _, ev := range evs {
			msg = append(msg, ev.Data...)
		}
		if len(msg) > 0 {
			if err := conn.Write(ctx, websocket.MessageBinary, msg); err != nil {
				return nil
			}
		}
		if ended {
			break
		}
		i = next
		select {
		case <-more:
		case <-ctx.Done():
			return nil
		}
	}
	info := p.snapshot()
	exit, _ := json.Marshal(apiv1.PtyControl{Type: "exit", ExitCode: info.ExitCode, Signal: info.Signal})
	if conn.Write(ctx, websocket.MessageText, exit) == nil {
		conn.Close(websocket.StatusNormalClosure, "exited")
	}
	return nil
}
