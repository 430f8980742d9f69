package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// execd's commands over the agent's: a command's ID is its PID. A
// foreground command's output streams as server-sent events, one JSON
// event per line of output as execd sends them (init, stdout, stderr,
// ping, then execution_complete, or error whose evalue is the exit code);
// a background command's stream ends after its init, and its output is
// read by GET /command/{id}/logs.

// runCommandRequest is execd's RunCommandRequest.
type runCommandRequest struct {
	Command    string            `json:"command"`
	Cwd        string            `json:"cwd"`
	Background bool              `json:"background"`
	Timeout    int64             `json:"timeout"` // milliseconds; 0: none
	UID        *uint32           `json:"uid"`
	GID        *uint32           `json:"gid"`
	Envs       map[string]string `json:"envs"`
}

// execdEvent is execd's ServerStreamEvent.
type execdEvent struct {
	Type          string      `json:"type"`
	Text          string      `json:"text,omitempty"`
	ExecutionTime *int64      `json:"execution_time,omitempty"`
	Timestamp     int64       `json:"timestamp"`
	Error         *execdFault `json:"error,omitempty"`
}

// execdFault is a failed execution: execd's ErrorOutput.
type execdFault struct {
	EName     string   `json:"ename"`
	EValue    string   `json:"evalue"`
	Traceback []string `json:"traceback"`
}

// execdPing is how often a quiet stream sends a ping event.
const execdPing = 15 * time.Second

// execdRun starts a command as uid (and gid) and streams it; a client that
// leaves does not end it.
func (a *Agent) execdRun(w http.ResponseWriter, r *http.Request) error {
	var req runCommandRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(req.Command) == "":
		return invalidField("command", "command is empty")
	case req.Timeout < 0:
		return invalidField("timeout", "timeout must be 0 (none) or more milliseconds")
	case req.GID != nil && req.UID == nil:
		return invalidField("gid", "gid needs uid")
	}
	user := ""
	if req.UID != nil {
		user = strconv.FormatUint(uint64(*req.UID), 10)
		if req.GID != nil {
			user += ":" + strconv.FormatUint(uint64(*req.GID), 10)
		}
	}
	argv := shellArgv(req.Command)
	c, err := a.launch(launch{argv: argv, env: req.Envs, cwd: req.Cwd, user: user,
		timeout: time.Duration(req.Timeout) * time.Millisecond, info: apiv1.CommandInfo{Cmd: req.Command}})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := writeEvent(w, execdEvent{Type: "init", Text: strconv.Itoa(c.pid)}); err != nil || req.Background {
		return nil
	}
	flush(w)
	lines := &lineSplitter{emit: func(stream string, line []byte) error {
		return writeEvent(w, execdEvent{Type: stream, Text: string(line)})
	}}
	ping := keepalive{every: execdPing, send: func() error { return writeEvent(w, execdEvent{Type: "ping", Text: "pong"}) }}
	if err := followOutput(r.Context(), w, c, lines.write, ping); err != nil {
		return nil // the client left
	}
	if lines.flush() != nil {
		return nil
	}
	writeEvent(w, c.execdEnd())
	return nil
}

// writeEvent writes one event as execd does: its JSON, then a blank line.
func writeEvent(w http.ResponseWriter, e execdEvent) error {
	e.Timestamp = time.Now().UnixMilli()
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n', '\n'))
	return err
}

// execdEnd is the last event of c, which has ended: execution_complete
// when it exited 0, else an error whose evalue is its exit code (-1 for a
// signal), as the SDKs read it.
func (c *command) execdEnd() execdEvent {
	info := c.snapshot()
	ms := info.EndedAt.Sub(info.StartedAt).Milliseconds()
	if *info.ExitCode == 0 {
		return execdEvent{Type: "execution_complete", ExecutionTime: &ms}
	}
	why := "exit status " + strconv.Itoa(*info.ExitCode)
	if info.Signal != "" {
		why = "signal: " + info.Signal
	}
	if e := c.endEvent().Error; e != "" {
		why += " (" + e + ")"
	}
	return execdEvent{Type: "error", Error: &execdFault{EName: "CommandExecError", EValue: strconv.Itoa(*info.ExitCode), Traceback: []string{why}}}
}

// lineSplitter turns output chunks into lines, each stream's own: a line
// goes out without its end (\n, or \r\n), a blank one as "\n", as execd
// sends them; flush sends what is left of each stream's last line.
type lineSplitter struct {
	emit    func(stream string, line []byte) error
	pending map[string][]byte
}

func (l *lineSplitter) write(chunks []chunk) error {
	if l.pending == nil {
		l.pending = map[string][]byte{}
	}
	for _, c := range chunks {
		buf := append(l.pending[c.stream], c.data...)
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			line := bytes.TrimSuffix(buf[:i], []byte("\r"))
			if len(line) == 0 {
				line = []byte("\n")
			}
			if err := l.emit(c.stream, line); err != nil {
				return err
			}
			buf = buf[i+1:]
		}
		l.pending[c.stream] = append([]byte(nil), buf...)
	}
	return nil
}

func (l *lineSplitter) flush() error {
	for _, stream := range []string{"stdout", "stderr"} {
		if rest := l.pending[stream]; len(rest) > 0 {
			if err := l.emit(stream, rest); err != nil {
				return err
			}
		}
	}
	return nil
}

// execdInterrupt kills the command ?id names, and what it started.
func (a *Agent) execdInterrupt(w http.ResponseWriter, r *http.Request) error {
	c, err := a.execdCommand(r.URL.Query().Get("id"))
	if err != nil {
		return err
	}
	if c.running() {
		c.kill("interrupted")
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// execdCommand is the command an execd ID (its PID) names.
func (a *Agent) execdCommand(id string) (*command, error) {
	if _, err := strconv.Atoi(id); err != nil {
		return nil, invalidField("id", "id %s is not a command's ID", quote(id))
	}
	return a.procs.find(id)
}

// commandStatus is execd's CommandStatusResponse.
type commandStatus struct {
	ID         string     `json:"id"`
	Content    string     `json:"content"`
	Running    bool       `json:"running"`
	ExitCode   *int       `json:"exit_code"`
	Error      string     `json:"error,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

// execdCommandGet serves GET /command/status/{id} (execdStatus) and GET
// /command/{id}/logs (execdLogs).
func (a *Agent) execdCommandGet(w http.ResponseWriter, r *http.Request) error {
	switch first, second := r.PathValue("a"), r.PathValue("b"); {
	case first == "status":
		return a.execdStatus(w, r, second)
	case second == "logs":
		return a.execdLogs(w, r, first)
	}
	return notFound("no route GET /command/%s", short(r.PathValue("a")+"/"+r.PathValue("b")))
}

func (a *Agent) execdStatus(w http.ResponseWriter, r *http.Request, id string) error {
	c, err := a.execdCommand(id)
	if err != nil {
		return err
	}
	info := c.snapshot()
	out := commandStatus{ID: strconv.Itoa(c.pid), Content: info.Cmd, Running: info.Running, ExitCode: info.ExitCode,
		StartedAt: info.StartedAt, FinishedAt: info.EndedAt}
	if info.Cmd == "" {
		out.Content = strings.Join(c.argv, " ")
	}
	if !info.Running && (*info.ExitCode != 0 || info.Signal != "") {
		out.Error = c.execdEnd().Error.Traceback[0]
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// execdLogs answers the output a command's buffer holds as text, from the
// line ?cursor on (0, the first, by default), and in
// EXECD-COMMANDS-TAIL-CURSOR the cursor of the next read: the number of
// whole lines read. An unfinished last line is sent once the command has
// ended.
func (a *Agent) execdLogs(w http.ResponseWriter, r *http.Request, id string) error {
	c, err := a.execdCommand(id)
	if err != nil {
		return err
	}
	cursor := 0
	if v := r.URL.Query().Get("cursor"); v != "" {
		if cursor, err = strconv.Atoi(v); err != nil || cursor < 0 {
			return invalidField("cursor", "cursor %s must be a line number from 0", quote(v))
		}
	}
	running := c.running()
	var all []byte
	for _, ch := range heldOutput(c) {
		all = append(all, ch.data...)
	}
	lines := strings.SplitAfter(string(all), "\n")
	if last := lines[len(lines)-1]; last == "" || running {
		lines = lines[:len(lines)-1] // no line, or one still being written
	}
	from := min(cursor, len(lines))
	w.Header().Set("EXECD-COMMANDS-TAIL-CURSOR", strconv.Itoa(len(lines)))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write([]byte(strings.Join(lines[from:], "")))
	return nil
}

// heldOutput is what c's output buffer holds now, without waiting.
func heldOutput(c *command) []chunk {
	rd := c.out.attach()
	defer rd.detach()
	now := make(chan time.Time)
	close(now)
	chunks, _ := rd.next(context.Background(), now)
	return chunks
}
