package sshgate

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"golang.org/x/crypto/ssh"
)

// Sessions (RFC 4254 §6): before the program starts, a terminal (pty-req)
// and environment variables (env); then one of shell, exec or subsystem
// sftp; while it runs, window changes and signals. The program runs
// through the sandbox's agent as the sandbox's default user, in its
// default working directory (/workspace in sbx's templates): with a
// terminal on the agent's PTY, else as a command whose stdin, stdout and
// stderr are the channel's. Its end is the channel's exit-status, or
// exit-signal; a sandbox that stops meanwhile ends the channel saying why,
// with neither (ssh then exits 255). A client that closes the channel
// first leaves the program a SIGHUP, as a terminal's hangup does.

// hangupTimeout bounds the SIGHUP sent to a program whose client left.
const hangupTimeout = 5 * time.Second

// Terminal sizes the agent takes.
const (
	minTermSize, maxTermSize = 1, 1000
	defaultCols, defaultRows = 80, 24
)

// session is one session channel.
type session struct {
	c   *conn
	ch  ssh.Channel
	env map[string]string
	pty *apiv1.PtySize // asked for with pty-req; its size follows window-change
	wg  sync.WaitGroup // the program

	mu       sync.Mutex
	started  bool
	terminal bool           // the program runs on a terminal: sbx's words go to its output
	pid      int            // once the program runs
	term     *agentcall.Pty // once a terminal runs
	agent    agentcall.Agent
	ctx      context.Context // the program's, once it runs
}

func (c *conn) session(ctx context.Context, nch ssh.NewChannel) {
	ch, reqs, err := nch.Accept()
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &session{c: c, ch: ch, env: map[string]string{}}
	for req := range reqs { // until the channel closes: the client's close, or ours after the program's end
		s.handle(ctx, req)
	}
	cancel() // the program's client left: it stops being followed (and gets its SIGHUP)
	s.wg.Wait()
	ch.Close()
}

// handle answers one request of the session.
func (s *session) handle(ctx context.Context, req *ssh.Request) {
	ok := false
	switch req.Type {
	case "pty-req":
		ok = s.ptyReq(req.Payload)
	case "env":
		ok = s.setEnv(req.Payload)
	case "window-change":
		ok = s.windowChange(req.Payload)
	case "signal":
		ok = s.signal(req.Payload)
	case "shell", "exec", "subsystem":
		if s.start(ctx, req) {
			return // answered
		}
	}
	// Anything else (x11-req, auth-agent-req@openssh.com, break, …) is refused.
	if req.WantReply {
		req.Reply(ok, nil)
	}
}

// ptyReq records the terminal asked for: its TERM and size (the modes are
// the agent's terminal's defaults).
func (s *session) ptyReq(payload []byte) bool {
	var p struct {
		Term             string
		Cols, Rows, W, H uint32
		Modes            string
	}
	if ssh.Unmarshal(payload, &p) != nil || s.isStarted() {
		return false
	}
	size := termSize(p.Cols, p.Rows)
	s.pty = &size
	if sbx.EnvValueProblem(p.Term) == "" && p.Term != "" {
		s.env["TERM"] = p.Term
	}
	return true
}

// termSize is a terminal's size as the agent takes it.
func termSize(cols, rows uint32) apiv1.PtySize {
	clamp := func(v, def uint32) uint16 {
		if v == 0 {
			return uint16(def)
		}
		return uint16(min(max(v, minTermSize), maxTermSize))
	}
	return apiv1.PtySize{Cols: clamp(cols, defaultCols), Rows: clamp(rows, defaultRows)}
}

// setEnv adds an environment variable for the program, if it is one the
// API would take (a valid name, not SBX_ACCESS_TOKEN; a value of at most 32
// KiB without NUL; at most 256 of them).
func (s *session) setEnv(payload []byte) bool {
	var p struct{ Name, Value string }
	if ssh.Unmarshal(payload, &p) != nil || s.isStarted() || sbx.EnvProblem(p.Name, p.Value) != "" {
		return false
	}
	if _, had := s.env[p.Name]; !had && len(s.env) >= sbx.MaxEnvVars {
		return false
	}
	s.env[p.Name] = p.Value
	return true
}

// windowChange resizes the terminal.
func (s *session) windowChange(payload []byte) bool {
	var p struct{ Cols, Rows, W, H uint32 }
	if ssh.Unmarshal(payload, &p) != nil || s.pty == nil {
		return false
	}
	size := termSize(p.Cols, p.Rows)
	s.mu.Lock()
	*s.pty = size
	term, runCtx := s.term, s.ctx
	s.mu.Unlock()
	if term == nil {
		return true // the terminal starts with it
	}
	if err := term.Resize(runCtx, size.Cols, size.Rows); err != nil {
		s.c.g.log.Debug("ssh: resize", "sandbox", s.c.ref, "err", err)
		return false
	}
	return true
}

// signal sends a signal (its name without SIG) to the program's process
// group.
func (s *session) signal(payload []byte) bool {
	var p struct{ Name string }
	if ssh.Unmarshal(payload, &p) != nil || !signalName(p.Name) {
		return false
	}
	s.mu.Lock()
	pid, agent, runCtx := s.pid, s.agent, s.ctx
	s.mu.Unlock()
	if pid == 0 {
		return false
	}
	return agent.Signal(runCtx, pid, p.Name) == nil
}

// signalName reports whether s looks like a signal's name without SIG.
func signalName(s string) bool {
	if len(s) == 0 || len(s) > 16 {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func (s *session) isStarted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started
}

// start answers shell, exec and subsystem: it starts the program, once per
// session, and reports whether it answered the request.
func (s *session) start(ctx context.Context, req *ssh.Request) bool {
	var prog program
	switch req.Type {
	case "shell":
		prog = program{pty: s.pty != nil, cmd: noTerminalShell}
	case "exec":
		var p struct{ Command string }
		if ssh.Unmarshal(req.Payload, &p) != nil || p.Command == "" {
			return false
		}
		prog = program{pty: s.pty != nil, cmd: p.Command}
	case "subsystem":
		var p struct{ Name string }
		if ssh.Unmarshal(req.Payload, &p) != nil || p.Name != "sftp" {
			return false // the one subsystem is sftp
		}
		prog = program{args: []string{apiv1.SFTPServer}}
	}
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return false
	}
	s.started, s.terminal = true, prog.pty
	s.mu.Unlock()
	if req.WantReply {
		req.Reply(true, nil)
	}
	if req.Type == "shell" && prog.pty {
		prog.cmd = "" // the agent's login shell
	}
	s.wg.Go(func() {
		defer s.ch.Close()
		s.run(ctx, prog)
	})
	return true
}

// noTerminalShell is the program of a shell without a terminal: the shell
// the agent runs command lines with, as a login shell reading stdin.
const noTerminalShell = `exec "$0" -l`

// program is what a session runs: a command line (empty: a terminal's
// login shell) or an argv, on a terminal or not.
type program struct {
	pty  bool
	cmd  string
	args []string
}

// run runs the program in the sandbox, waking it first, and reports its end.
func (s *session) run(ctx context.Context, prog program) {
	log := s.c.g.log
	a, err := s.c.g.mgr.AgentFor(ctx, s.c.caller, s.c.ref, "an SSH session")
	if err != nil {
		s.fail(err)
		return
	}
	defer a.Close()
	agent := agentcall.For(a.Sandbox, a.Addr)
	s.mu.Lock()
	s.agent, s.ctx = agent, a.Context
	s.mu.Unlock()
	var code *int
	var signal string
	if prog.pty {
		code, signal, err = s.runTerminal(a.Context, agent, prog.cmd)
	} else {
		code, signal, err = s.runCommand(a.Context, agent, prog)
	}
	switch {
	case err == nil:
		s.exit(code, signal)
	case a.Stopped() != nil:
		s.say(a.Stopped().Message)
	case ctx.Err() != nil: // the client closed the channel first
		s.hangup(agent)
	default:
		log.Warn("ssh: the sandbox's agent failed a session", "sandbox", a.Sandbox.ProviderSandboxID, "err", err)
		s.say("the agent of sandbox " + a.Sandbox.ProviderSandboxID + " failed: " + err.Error())
	}
}

// runCommand runs a program without a terminal: its stdin is what the
// client sends until its EOF, its stdout and stderr the channel's.
func (s *session) runCommand(ctx context.Context, agent agentcall.Agent, prog program) (*int, string, error) {
	req := apiv1.StartCommandRequest{Cmd: prog.cmd, Args: prog.args}
	if prog.args == nil {
		req.Env = s.env
	}
	end, err := agent.Run(ctx, req, agentcall.Streams{Stdin: s.ch, Stdout: s.ch, Stderr: s.ch.Stderr(), Started: s.running})
	if err != nil {
		return nil, "", err
	}
	if end.Signal != "" {
		return nil, end.Signal, nil
	}
	if end.Error != "" {
		s.ch.Stderr().Write([]byte("sbx: " + end.Error + "\n"))
	}
	return end.ExitCode, "", nil
}

// runTerminal runs a program on a terminal (cmd empty: a login shell):
// what the client sends is typed into it (its EOF a ^D), its output is the
// channel's.
func (s *session) runTerminal(ctx context.Context, agent agentcall.Agent, cmd string) (*int, string, error) {
	s.mu.Lock()
	size := *s.pty
	s.mu.Unlock()
	term, err := agent.StartPty(ctx, apiv1.StartPtyRequest{Cols: size.Cols, Rows: size.Rows, Cmd: cmd, Env: s.env})
	if err != nil {
		return nil, "", err
	}
	defer term.Close()
	s.running(term.PID)
	s.mu.Lock()
	s.term = term
	if *s.pty != size { // a window change came meanwhile
		term.Resize(ctx, s.pty.Cols, s.pty.Rows)
	}
	s.mu.Unlock()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := s.ch.Read(buf)
			if n > 0 && term.Write(ctx, buf[:n]) != nil {
				return
			}
			if errors.Is(err, io.EOF) {
				term.Write(ctx, []byte{4}) // ^D: end of input at the start of a line
			}
			if err != nil {
				return
			}
		}
	}()
	exit, err := term.Follow(ctx, s.ch)
	if err != nil {
		return nil, "", err
	}
	if exit.Signal != "" {
		return nil, exit.Signal, nil
	}
	return exit.ExitCode, "", nil
}

// running records the program's PID, for signals.
func (s *session) running(pid int) {
	s.mu.Lock()
	s.pid = pid
	s.mu.Unlock()
}

// exit ends the channel's output and reports how the program ended.
func (s *session) exit(code *int, signal string) {
	s.ch.CloseWrite()
	switch {
	case signal != "":
		s.ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Signal     string
			CoreDumped bool
			Message    string
			Lang       string
		}{Signal: signal}))
	case code != nil && *code >= 0:
		s.ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(*code)}))
	}
}

// say writes a line from sbx on the channel's stderr (a terminal's output,
// on a terminal).
func (s *session) say(msg string) {
	w := s.ch.Stderr()
	s.mu.Lock()
	if s.terminal {
		w = s.ch
	}
	s.mu.Unlock()
	w.Write([]byte("\r\nsbx: " + msg + "\r\n"))
}

// fail reports a program that could not start: why, on stderr.
func (s *session) fail(err error) {
	s.say(userMessage(s.c, err))
}

// hangup sends SIGHUP to the program of a client that left.
func (s *session) hangup(agent agentcall.Agent) {
	s.mu.Lock()
	pid := s.pid
	s.mu.Unlock()
	if pid == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(s.c.g.ctx, hangupTimeout)
	defer cancel()
	agent.Signal(ctx, pid, "HUP")
}

// userMessage is what a client is told of err: an *sbx.Error's message
// (the API's words), else that the sandbox could not be reached, with the
// error in the log.
func userMessage(c *conn, err error) string {
	var e *sbx.Error
	if errors.As(err, &e) {
		return e.Message
	}
	c.g.log.Warn("ssh: reaching a sandbox failed", "sandbox", c.ref, "err", err)
	return "sandbox " + c.ref + " could not be reached"
}
