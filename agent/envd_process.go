package agent

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// envd's process.Process service over the agent's commands and PTYs: one
// table and one output buffer each, whichever API started them. A process
// is found by its PID or tag; one that has exited is still followed
// (Connect replays what its buffer holds) but no longer listed, fed or
// signalled, as envd forgets it.

// Messages of envd's process.proto, as E2B's SDKs send and read them.
type (
	processConfig struct {
		Cmd  string            `json:"cmd,omitempty"`
		Args []string          `json:"args,omitempty"`
		Envs map[string]string `json:"envs,omitempty"`
		Cwd  string            `json:"cwd,omitempty"`
	}
	ptySpec struct {
		Size *struct {
			Cols pbUint32 `json:"cols"`
			Rows pbUint32 `json:"rows"`
		} `json:"size"`
	}
	processSelector struct {
		PID *pbUint32 `json:"pid"`
		Tag *string   `json:"tag"`
	}
	startRequest struct {
		Process processConfig `json:"process"`
		Pty     *ptySpec      `json:"pty"`
		Tag     string        `json:"tag"`
		Stdin   *bool         `json:"stdin"` // envd keeps stdin open unless told not to
	}
	selectRequest struct { // ConnectRequest, CloseStdinRequest
		Process *processSelector `json:"process"`
	}
	sendInputRequest struct {
		Process *processSelector `json:"process"`
		Input   *struct {
			Stdin pbBytes `json:"stdin"`
			Pty   pbBytes `json:"pty"`
		} `json:"input"`
	}
	sendSignalRequest struct {
		Process *processSelector `json:"process"`
		Signal  signalEnum       `json:"signal"`
	}
	updateRequest struct {
		Process *processSelector `json:"process"`
		Pty     *ptySpec         `json:"pty"`
	}
	processInfo struct {
		Config processConfig `json:"config"` // the SDKs need it present
		PID    int           `json:"pid,omitempty"`
		Tag    string        `json:"tag,omitempty"`
	}
	listResponse struct {
		Processes []processInfo `json:"processes,omitempty"`
	}
	processMessage struct { // StartResponse, ConnectResponse
		Event processEvent `json:"event"`
	}
	processEvent struct { // data events are encoded by envdData, keepalives are processKeepalive
		Start *startEvent `json:"start,omitempty"`
		End   *endEvent   `json:"end,omitempty"`
	}
	startEvent struct {
		PID int `json:"pid,omitempty"`
	}
	endEvent struct {
		ExitCode int     `json:"exitCode,omitempty"`
		Exited   bool    `json:"exited,omitempty"`
		Status   string  `json:"status,omitempty"`
		Error    *string `json:"error,omitempty"`
	}
	empty struct{}
)

// processKeepalive is the keepalive message of a process's stream.
var processKeepalive = []byte(`{"event":{"keepalive":{}}}`)

// signalEnum is process.Signal: SIGNAL_SIGTERM or SIGNAL_SIGKILL.
type signalEnum int32

var signalValues = map[string]int32{"SIGNAL_UNSPECIFIED": 0, "SIGNAL_SIGTERM": 15, "SIGNAL_SIGKILL": 9}

func (s *signalEnum) UnmarshalJSON(data []byte) error {
	n, err := decodeEnum(data, signalValues)
	*s = signalEnum(n)
	return err
}

// envdStart starts a process, on pipes or on a terminal (pty), as the
// request's user, and streams it (envdFollow). Connect-Timeout-Ms is the
// process's lifetime, as envd has it: it is killed when that elapses, and
// its stream ends with its end. A client that leaves does not end it.
func (a *Agent) envdStart(r *http.Request, req *startRequest, s *connectStream) error {
	user, err := basicUser(r)
	if err != nil {
		return err
	}
	acct, err := a.envdAccount(user)
	if err != nil {
		return err
	}
	timeout, err := connectTimeout(r)
	if err != nil {
		return err
	}
	p := req.Process
	if p.Cmd == "" {
		return rpcError(codeInvalidArgument, "process.cmd is empty")
	}
	cwd := ""
	if p.Cwd != "" {
		if cwd, err = a.envdPath(p.Cwd, acct); err != nil {
			return err
		}
	}
	argv := append([]string{p.Cmd}, p.Args...)
	l := launch{
		argv: argv, env: p.Envs, cwd: cwd, user: user, tag: req.Tag, stdin: req.Stdin == nil || *req.Stdin,
		timeout: timeout, info: apiv1.CommandInfo{Args: argv},
	}
	if req.Pty != nil {
		size, err := req.Pty.size()
		if err != nil {
			return err
		}
		l.pty = &size
	}
	c, err := a.launch(l)
	if err != nil {
		return err
	}
	return envdFollow(r.Context(), s, c, keepaliveInterval(r))
}

// envdConnect streams a process that runs, or ran: from what its buffer
// still holds. Connect-Timeout-Ms ends the stream, not the process.
func (a *Agent) envdConnect(r *http.Request, req *selectRequest, s *connectStream) error {
	c, err := a.findProcess(req.Process, false)
	if err != nil {
		return err
	}
	timeout, err := connectTimeout(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return envdFollow(ctx, s, c, keepaliveInterval(r))
}

// envdFollow streams c: the start event, its output from what its buffer
// holds, then live (batched as the agent's own streams are: followOutput),
// a keepalive whenever it has been quiet for ping, and its end event. The
// start event goes out at once, and the end with the end of the stream.
func envdFollow(ctx context.Context, s *connectStream, c *command, ping time.Duration) error {
	if err := s.send(processMessage{Event: processEvent{Start: &startEvent{PID: c.pid}}}); err != nil {
		return err
	}
	s.flush()
	ew := &eventWriter{w: s.w, encode: c.envdData}
	err := followOutput(ctx, s.w, c, ew.write, keepalive{every: ping, send: func() error { return s.sendRaw(processKeepalive) }})
	if err != nil {
		return err
	}
	return s.send(processMessage{Event: processEvent{End: c.envdEnd()}})
}

// envdData appends data as an enveloped data event: stdout or stderr, or a
// terminal's pty.
func (c *command) envdData(buf []byte, stream string, data []byte) []byte {
	if c.tty != nil {
		stream = "pty"
	}
	return appendEnvelope(buf, 0, func(b []byte) []byte {
		b = append(b, `{"event":{"data":{"`...)
		b = append(b, stream...)
		b = append(b, `":"`...)
		b = base64.StdEncoding.AppendEncode(b, data)
		return append(b, `"}}}`...)
	})
}

// envdEnd is the end event of c, which has ended, as envd makes it from
// Go's os.ProcessState: the exit code (-1 for a signal), whether it
// exited, the state's String, and for a failure cmd.Wait's error, the same
// text ("exit status 3", "signal: killed").
func (c *command) envdEnd() *endEvent {
	c.mu.Lock()
	ws := c.status
	c.mu.Unlock()
	e := &endEvent{ExitCode: ws.ExitStatus(), Exited: ws.Exited()}
	switch {
	case ws.Exited():
		e.Status = "exit status " + strconv.Itoa(ws.ExitStatus())
	case ws.Signaled():
		e.Status = "signal: " + ws.Signal().String()
	}
	if ws.CoreDump() {
		e.Status += " (core dumped)"
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		e.Error = &e.Status
	}
	return e
}

// envdList lists the processes that run.
func (a *Agent) envdList(*http.Request, *empty) (*listResponse, error) {
	resp := &listResponse{}
	for _, c := range a.procs.all() {
		if c.running() {
			resp.Processes = append(resp.Processes, processInfo{
				Config: processConfig{Cmd: c.argv[0], Args: c.argv[1:], Envs: c.env, Cwd: c.info.Cwd},
				PID:    c.pid, Tag: c.tag,
			})
		}
	}
	return resp, nil
}

// envdSendInput writes to a process's stdin, or its terminal.
func (a *Agent) envdSendInput(_ *http.Request, req *sendInputRequest) (*empty, error) {
	c, err := a.findProcess(req.Process, true)
	if err != nil {
		return nil, err
	}
	if req.Input == nil {
		return nil, rpcError(codeInvalidArgument, "input is missing")
	}
	data := req.Input.Stdin
	if data == nil {
		data = req.Input.Pty
	}
	return &empty{}, c.writeStdin(bytes.NewReader(data))
}

// envdSendSignal kills a process's group (SIGNAL_SIGKILL) or sends it
// SIGTERM.
func (a *Agent) envdSendSignal(_ *http.Request, req *sendSignalRequest) (*empty, error) {
	c, err := a.findProcess(req.Process, true)
	if err != nil {
		return nil, err
	}
	switch req.Signal {
	case signalEnum(syscall.SIGKILL):
		c.kill("killed")
	case signalEnum(syscall.SIGTERM):
		err = c.signal(syscall.SIGTERM)
	default:
		err = rpcError(codeInvalidArgument, "signal must be SIGNAL_SIGTERM or SIGNAL_SIGKILL")
	}
	return &empty{}, err
}

// envdCloseStdin makes a process read end of file (command.closeStdin).
func (a *Agent) envdCloseStdin(_ *http.Request, req *selectRequest) (*empty, error) {
	c, err := a.findProcess(req.Process, true)
	if err != nil {
		return nil, err
	}
	return &empty{}, c.closeStdin()
}

// envdUpdate resizes a process's terminal.
func (a *Agent) envdUpdate(_ *http.Request, req *updateRequest) (*empty, error) {
	c, err := a.findProcess(req.Process, true)
	switch {
	case err != nil:
		return nil, err
	case req.Pty == nil: // nothing to update
		return &empty{}, nil
	case c.tty == nil:
		return nil, rpcError(codeInvalidArgument, "process %d has no terminal", c.pid)
	}
	size, err := req.Pty.size()
	if err != nil {
		return nil, err
	}
	return &empty{}, resize(c, size)
}

// size is the terminal size asked for, from 1x1 to 1000x1000.
func (p *ptySpec) size() (apiv1.PtySize, error) {
	if p.Size == nil || p.Size.Cols > 1000 || p.Size.Rows > 1000 {
		return apiv1.PtySize{}, rpcError(codeInvalidArgument, "pty.size needs cols and rows from 1 to 1000")
	}
	size := apiv1.PtySize{Cols: uint16(p.Size.Cols), Rows: uint16(p.Size.Rows)}
	return size, checkSize(size)
}

// findProcess answers the process sel names, by PID or tag; with running,
// one that has exited is not found.
func (a *Agent) findProcess(sel *processSelector, running bool) (*command, error) {
	var ref string
	switch {
	case sel != nil && sel.PID != nil:
		ref = strconv.FormatUint(uint64(*sel.PID), 10)
	case sel != nil && sel.Tag != nil:
		ref = *sel.Tag
	default:
		return nil, rpcError(codeInvalidArgument, "process needs a pid or a tag")
	}
	c, err := a.procs.find(ref)
	if err != nil {
		return nil, err
	}
	if running && !c.running() {
		return nil, rpcError(codeNotFound, "process %s has exited", quote(ref))
	}
	return c, nil
}
