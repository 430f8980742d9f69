package e2b

import (
	"context"
	"encoding/base64"
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

// Commands and PTYs as envd processes. The bridge starts each with envd's
// Start and reads its stream to the end in the background, keeping its
// output (the last maxOutput bytes) for whoever streams or attaches, and
// its end; envd's processes that the bridge did not start (an E2B SDK's)
// are found through envd's List and followed through its Connect.

// maxOutput bounds the output the bridge keeps of one process.
const maxOutput = 4 << 20

// proc is a process the bridge started.
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

// startSpec is what a command or a PTY asks of envd's Start.
type startSpec struct {
	user    string
	cmd     string
	args    []string
	env     map[string]string
	cwd     string
	tag     string
	stdin   bool
	pty     *apiv1.PtySize
	timeout time.Duration
	info    apiv1.CommandInfo // what the caller asked, for CommandInfo
}

// start starts a process and returns it once envd named its PID.
func (b *bridge) start(ctx context.Context, sp startSpec) (*proc, error) {
	if sp.tag != "" {
		if p, _ := b.find(sp.tag); p != nil && p.running() {
			return nil, apiError(http.StatusConflict, "a running command is tagged %s", sp.tag)
		}
	}
	req := map[string]any{
		"process": map[string]any{"cmd": sp.cmd, "args": nonNil(sp.args), "envs": sp.env, "cwd": sp.cwd},
		"stdin":   sp.stdin,
	}
	if sp.tag != "" {
		req["tag"] = sp.tag
	}
	if sp.pty != nil {
		req["pty"] = map[string]any{"size": map[string]any{"cols": sp.pty.Cols, "rows": sp.pty.Rows}}
	}
	s, err := b.envd.stream(b.ctx, "process.Process/Start", sp.user, req, sp.timeout)
	if err != nil {
		return nil, err
	}
	pid, err := startedPID(ctx, s)
	if err != nil {
		s.Close()
		return nil, err
	}
	p := &proc{info: sp.info, more: make(chan struct{}), done: make(chan struct{})}
	p.info.PID, p.info.Tag, p.info.Running, p.info.StartedAt = pid, sp.tag, true, time.Now().UTC()
	p.info.Pty = sp.pty != nil
	b.mu.Lock()
	b.procs[pid] = p
	b.mu.Unlock()
	go b.follow(p, s, sp.timeout)
	return p, nil
}

// startedPID reads a Start stream to its start event.
func startedPID(ctx context.Context, s *envdStream) (int, error) {
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	for {
		msg, err := s.Next()
		if err != nil {
			if err == io.EOF {
				err = apiError(http.StatusBadGateway, "envd ended the process's stream before it started")
			}
			return 0, err
		}
		var ev processEvent
		if err := json.Unmarshal(msg, &ev); err != nil {
			return 0, err
		}
		if ev.Event.Start != nil {
			return ev.Event.Start.PID, nil
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

// follow reads a process's stream to its end into p.
func (b *bridge) follow(p *proc, s *envdStream, timeout time.Duration) {
	defer s.Close()
	started := time.Now()
	for {
		msg, err := s.Next()
		if err != nil {
			code, sig, why := -1, "", "envd's stream of the process ended: "+err.Error()
			if err == io.EOF {
				why = "envd's stream of the process ended without its end"
			}
			p.end(code, sig, why)
			return
		}
		var ev processEvent
		if json.Unmarshal(msg, &ev) != nil {
			continue
		}
		switch e := ev.Event; {
		case e.Data != nil:
			p.add("stdout", e.Data.Stdout)
			p.add("stderr", e.Data.Stderr)
			p.add("stdout", e.Data.Pty)
		case e.End != nil:
			code, sig, why := e.End.ExitCode, "", ""
			if !e.End.Exited {
				code, sig, why = -1, signalOf(e.End.Status), e.End.Error
				if timeout > 0 && time.Since(started) >= timeout && sig == "KILL" {
					why = "timed out after " + timeout.String()
				}
			}
			p.end(code, sig, why)
			b.forgetEnded(p.info.PID)
			return
		}
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

// forgetEnded remembers p among the last maxEnded ended processes.
func (b *bridge) forgetEnded(pid int) {
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

func (p *proc) end(code int, sig, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now().UTC()
	p.info.Running, p.info.ExitCode, p.info.Signal, p.info.EndedAt, p.err = false, &code, sig, &now, why
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
// skipped), the index after them, and a channel closed when there is more.
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

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// tagPattern is what a tag may be (apiv1.StartCommandRequest's).
var tagPattern = regexp.MustCompile(`^([A-Za-z0-9_-][A-Za-z0-9._-]{0,63}|\.[A-Za-z0-9_-][A-Za-z0-9._-]{0,62}|\.\.[A-Za-z0-9._-]{1,62})$`)

// postCommand starts a command: its stream to its end, or, in the
// background, 201 and its CommandInfo.
func (b *bridge) postCommand(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.StartCommandRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	sp := startSpec{user: req.User, env: req.Env, cwd: req.Cwd, tag: req.Tag, stdin: req.Stdin,
		timeout: time.Duration(req.Timeout) * time.Second, info: apiv1.CommandInfo{Cmd: req.Cmd, Args: req.Args, Cwd: req.Cwd, User: req.User}}
	switch {
	case (req.Cmd == "") == (len(req.Args) == 0):
		return apiError(http.StatusBadRequest, "give exactly one of cmd and args")
	case req.Tag != "" && !tagPattern.MatchString(req.Tag):
		return apiError(http.StatusBadRequest, "tag %q must be 1 to 64 letters, digits, '.', '_' and '-', but not . or ..", req.Tag)
	case req.Timeout < 0:
		return apiError(http.StatusBadRequest, "timeout must not be negative")
	case len(req.Args) == 1 && req.Args[0] == apiv1.SFTPServer:
		return apiError(http.StatusNotImplemented, "provider e2b runs no sbx agent in its sandboxes, so no SFTP server")
	case req.Cmd != "":
		sp.cmd, sp.args = "/bin/bash", []string{"-l", "-c", req.Cmd}
	default:
		sp.cmd, sp.args = req.Args[0], req.Args[1:]
	}
	p, err := b.start(r.Context(), sp)
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

// run runs a program as user to its end; a failure is an error with its output.
func (b *bridge) run(ctx context.Context, user string, args ...string) error {
	p, err := b.start(ctx, startSpec{user: user, cmd: args[0], args: args[1:], timeout: time.Minute})
	if err != nil {
		return err
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if info := p.snapshot(); info.ExitCode == nil || *info.ExitCode != 0 {
		evs, _, _, _ := p.since(0)
		var out []byte
		for _, ev := range evs {
			out = append(out, ev.Data...)
		}
		return apiError(http.StatusBadRequest, "%s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
	}
	return nil
}

// listed is a process of envd's List.
type listed struct {
	PID    int    `json:"pid"`
	Tag    string `json:"tag"`
	Config struct {
		Cmd  string   `json:"cmd"`
		Args []string `json:"args"`
		Cwd  string   `json:"cwd"`
	} `json:"config"`
}

func (l listed) info() apiv1.CommandInfo {
	return apiv1.CommandInfo{PID: l.PID, Tag: l.Tag, Args: append([]string{l.Config.Cmd}, l.Config.Args...), Cwd: l.Config.Cwd, Running: true}
}

// envdProcesses is envd's List.
func (b *bridge) envdProcesses(ctx context.Context) ([]listed, error) {
	var out struct {
		Processes []listed `json:"processes"`
	}
	err := b.envd.unary(ctx, "process.Process/List", "", struct{}{}, &out)
	return out.Processes, err
}

// listCommands lists what the bridge started and what else envd runs.
func (b *bridge) listCommands(w http.ResponseWriter, r *http.Request) error {
	running, err := b.envdProcesses(r.Context())
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
	for _, l := range running {
		if !seen[l.PID] {
			list.Items = append(list.Items, l.info())
		}
	}
	slices.SortFunc(list.Items, func(a, b apiv1.CommandInfo) int { return a.PID - b.PID })
	writeJSON(w, http.StatusOK, list)
	return nil
}

// find is the process a ref (a PID or a tag) names among the bridge's own:
// the running one of a tag before an ended one.
func (b *bridge) find(ref string) (*proc, int) {
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

// lookup is the process ref names: the bridge's own, else one envd runs.
func (b *bridge) lookup(ctx context.Context, ref string) (*proc, *listed, error) {
	if p, _ := b.find(ref); p != nil {
		return p, nil, nil
	}
	running, err := b.envdProcesses(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, l := range running {
		if strconv.Itoa(l.PID) == ref || (l.Tag != "" && l.Tag == ref) {
			return nil, &l, nil
		}
	}
	return nil, nil, apiError(http.StatusNotFound, "no command %s", ref)
}

func (b *bridge) getCommand(w http.ResponseWriter, r *http.Request) error {
	p, l, err := b.lookup(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, infoOf(p, l))
	return nil
}

func infoOf(p *proc, l *listed) apiv1.CommandInfo {
	if p != nil {
		return p.snapshot()
	}
	return l.info()
}

// streamCommand streams a command's output: a process of the bridge's
// from what it keeps, another from now on, through envd's Connect.
func (b *bridge) streamCommand(w http.ResponseWriter, r *http.Request) error {
	p, l, err := b.lookup(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	if p == nil {
		s, err := b.envd.stream(b.ctx, "process.Process/Connect", "", map[string]any{"process": map[string]any{"pid": l.PID}}, 0)
		if err != nil {
			return err
		}
		p = &proc{info: l.info(), more: make(chan struct{}), done: make(chan struct{})}
		go b.follow(p, s, 0)
		defer s.Close()
	}
	p.stream(r.Context(), w, false)
	return nil
}

// selector names a process to envd.
func selector(pid int) map[string]any { return map[string]any{"pid": pid} }

func (b *bridge) pidOf(ctx context.Context, ref string) (*proc, int, error) {
	p, l, err := b.lookup(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	if p != nil {
		info := p.snapshot()
		if !info.Running {
			return nil, 0, apiError(http.StatusConflict, "command %d has ended", info.PID)
		}
		return p, info.PID, nil
	}
	return nil, l.PID, nil
}

// writeStdin sends the body to a command's stdin (a PTY's terminal), in
// pieces of at most 1 MiB.
func (b *bridge) writeStdin(w http.ResponseWriter, r *http.Request) error {
	p, pid, err := b.pidOf(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	field := "stdin"
	if p != nil && p.snapshot().Pty {
		field = "pty"
	}
	buf := make([]byte, 1<<20)
	for {
		n, rerr := io.ReadFull(r.Body, buf)
		if n > 0 {
			in := map[string]any{"process": selector(pid), "input": map[string]string{field: base64.StdEncoding.EncodeToString(buf[:n])}}
			if err := b.envd.unary(r.Context(), "process.Process/SendInput", "", in, nil); err != nil {
				return err
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return apiError(http.StatusBadRequest, "reading the input: %v", rerr)
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (b *bridge) closeStdin(w http.ResponseWriter, r *http.Request) error {
	_, pid, err := b.pidOf(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := b.envd.unary(r.Context(), "process.Process/CloseStdin", "", map[string]any{"process": selector(pid)}, nil); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// envdSignals are the signals envd sends, by the names and numbers a
// SignalRequest may give.
var envdSignals = map[string]string{"TERM": "SIGNAL_SIGTERM", "SIGTERM": "SIGNAL_SIGTERM", "15": "SIGNAL_SIGTERM",
	"KILL": "SIGNAL_SIGKILL", "SIGKILL": "SIGNAL_SIGKILL", "9": "SIGNAL_SIGKILL"}

func (b *bridge) signalCommand(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.SignalRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	sig, ok := envdSignals[strings.ToUpper(req.Signal)]
	if !ok {
		return apiError(http.StatusBadRequest, "signal %q: provider e2b's envd sends only TERM and KILL", req.Signal)
	}
	return b.signal(w, r, sig)
}

func (b *bridge) killCommand(w http.ResponseWriter, r *http.Request) error {
	return b.signal(w, r, "SIGNAL_SIGKILL")
}

// signal sends sig and answers the command as it is a moment later (ended,
// when it ended within a second).
func (b *bridge) signal(w http.ResponseWriter, r *http.Request, sig string) error {
	p, pid, err := b.pidOf(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := b.envd.unary(r.Context(), "process.Process/SendSignal", "", map[string]any{"process": selector(pid), "signal": sig}, nil); err != nil {
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
func (b *bridge) postPty(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.StartPtyRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	size := apiv1.PtySize{Cols: req.Cols, Rows: req.Rows}
	if err := checkSize(size); err != nil {
		return err
	}
	if req.Tag != "" && !tagPattern.MatchString(req.Tag) {
		return apiError(http.StatusBadRequest, "tag %q must be 1 to 64 letters, digits, '.', '_' and '-', but not . or ..", req.Tag)
	}
	env := map[string]string{"TERM": "xterm-256color"}
	maps.Copy(env, req.Env)
	sp := startSpec{user: req.User, cmd: "/bin/bash", args: []string{"-i", "-l"}, env: env, cwd: req.Cwd, tag: req.Tag, stdin: true,
		pty: &size, info: apiv1.CommandInfo{Cmd: req.Cmd, Cwd: req.Cwd, User: req.User}}
	if req.Cmd != "" {
		sp.args = []string{"-l", "-c", req.Cmd}
	}
	p, err := b.start(r.Context(), sp)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, p.snapshot())
	return nil
}

func checkSize(s apiv1.PtySize) error {
	if s.Cols < 1 || s.Cols > 1000 || s.Rows < 1 || s.Rows > 1000 {
		return apiError(http.StatusBadRequest, "cols and rows must be from 1 to 1000")
	}
	return nil
}

func (b *bridge) resize(ctx context.Context, pid int, s apiv1.PtySize) error {
	if err := checkSize(s); err != nil {
		return err
	}
	return b.envd.unary(ctx, "process.Process/Update", "", map[string]any{"process": selector(pid),
		"pty": map[string]any{"size": map[string]any{"cols": s.Cols, "rows": s.Rows}}}, nil)
}

func (b *bridge) resizePty(w http.ResponseWriter, r *http.Request) error {
	var req apiv1.PtySize
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	_, pid, err := b.pidOf(r.Context(), r.PathValue("ref"))
	if err != nil {
		return err
	}
	if err := b.resize(r.Context(), pid, req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// attachPty connects a WebSocket to a terminal the bridge started, as the
// agent does: its output kept, then live, as binary messages; binary
// messages back are its input, text messages PtyControl.
func (b *bridge) attachPty(w http.ResponseWriter, r *http.Request) error {
	p, _ := b.find(r.PathValue("ref"))
	if p == nil || !p.snapshot().Pty {
		return apiError(http.StatusNotFound, "no terminal %s", r.PathValue("ref"))
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
				in := map[string]any{"process": selector(pid), "input": map[string]string{"pty": base64.StdEncoding.EncodeToString(data)}}
				b.envd.unary(ctx, "process.Process/SendInput", "", in, nil)
				continue
			}
			var ctl apiv1.PtyControl
			if json.Unmarshal(data, &ctl) == nil && ctl.Type == "resize" {
				b.resize(ctx, pid, apiv1.PtySize{Cols: ctl.Cols, Rows: ctl.Rows})
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
