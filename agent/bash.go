package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sbxdev/sbx/agent/kernel"
)

// bashShell is a bash context's interpreter: one bash process that runs
// each execution's code with `source` (so cd, variables and functions
// persist, and a syntax error is the code's own), then prints a marker with
// the exit status on stdout and stderr, which ends the execution's output.
// An interrupt sends SIGINT to the processes bash runs (bash, trapping it,
// goes on); code that bash runs itself (a builtin loop) cannot be
// interrupted, so a timeout that does not end it kills the shell, and the
// context is dead.
type bashShell struct {
	*process
	stdin  io.WriteCloser
	stdout chan []byte
	stderr chan []byte
	dir    string // holds each execution's code
	n      int
}

// bashInterruptGrace is how long an interrupted execution may take to end
// before its shell is killed.
const bashInterruptGrace = 3 * time.Second

func (a *Agent) startBash(c *codeContext) (*bashShell, error) {
	cmd, acct, err := a.command(c, "bash", "--noprofile", "--norc")
	if err != nil {
		return nil, err
	}
	b := &bashShell{stdout: make(chan []byte, 64), stderr: make(chan []byte, 64)}
	if b.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if b.dir, err = os.MkdirTemp("", "sbx-bash-"); err != nil {
		return nil, err
	}
	if acct.cred != nil {
		os.Chown(b.dir, int(acct.cred.Uid), int(acct.cred.Gid))
	}
	if b.process, err = a.start(cmd); err != nil {
		os.RemoveAll(b.dir)
		return nil, err
	}
	go pump(out, b.stdout)
	go pump(errOut, b.stderr)
	if _, err := io.WriteString(b.stdin, "trap : INT\n"); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// pump passes what r gives to ch, a copy at a time, and closes ch at r's end.
func pump(r io.Reader, ch chan<- []byte) {
	defer close(ch)
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			ch <- bytes.Clone(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// Execute runs code in the shell; see bashShell.
func (b *bashShell) Execute(ctx context.Context, code string, emit func(kernel.Output) error) (kernel.Reply, error) {
	b.n++
	file := filepath.Join(b.dir, fmt.Sprintf("code-%d.sh", b.n))
	if err := os.WriteFile(file, []byte(code), 0o644); err != nil {
		return kernel.Reply{}, err
	}
	defer os.Remove(file)
	mark := "__sbx_end_" + randomMark()
	line := fmt.Sprintf("source %s; printf '\\n%s %%d\\n' $?; printf '\\n%s\\n' >&2\n", file, mark, mark)
	if _, err := io.WriteString(b.stdin, line); err != nil {
		return kernel.Reply{}, &kernel.ExitedError{Err: b.err}
	}
	out := &marked{mark: "\n" + mark, emit: func(s string) error { return emit(kernel.Output{Type: "stdout", Text: s}) }}
	errs := &marked{mark: "\n" + mark, emit: func(s string) error { return emit(kernel.Output{Type: "stderr", Text: s}) }}
	done := ctx.Done()
	var grace <-chan time.Time
	for !out.ended || !errs.ended {
		select {
		case p, ok := <-b.stdout:
			if !ok {
				return kernel.Reply{}, b.exitedError()
			}
			out.add(p)
		case p, ok := <-b.stderr:
			if !ok {
				return kernel.Reply{}, b.exitedError()
			}
			errs.add(p)
		case <-done:
			b.Interrupt()
			done, grace = nil, time.After(bashInterruptGrace)
		case <-grace:
			b.Close()
			return kernel.Reply{}, &kernel.ExitedError{Err: fmt.Errorf("bash ran on after an interrupt (a builtin loop?) and was killed")}
		}
	}
	rc, _ := strconv.Atoi(strings.TrimSpace(out.rest))
	reply := kernel.Reply{Status: "ok", ExecutionCount: b.n}
	if rc != 0 {
		reply.Status = "error"
		emit(kernel.Output{Type: "error", Name: "NonZeroExit", Value: fmt.Sprintf("exit status %d", rc)})
	}
	return reply, nil
}

func (b *bashShell) exitedError() error {
	<-b.exited
	return &kernel.ExitedError{Err: b.err}
}

// marked passes a stream's text on until its marker, holding back what
// could be the marker's beginning.
type marked struct {
	mark  string
	buf   string
	rest  string // what follows the marker on its line (the exit status)
	ended bool
	emit  func(string) error
}

func (m *marked) add(p []byte) {
	if m.ended {
		return
	}
	m.buf += string(p)
	if i := strings.Index(m.buf, m.mark); i >= 0 {
		if end := strings.IndexByte(m.buf[i+len(m.mark):], '\n'); end >= 0 {
			if i > 0 {
				m.emit(m.buf[:i])
			}
			m.rest, m.ended = m.buf[i+len(m.mark):i+len(m.mark)+end], true
		}
		return
	}
	keep := min(len(m.buf), len(m.mark))
	if send := m.buf[:len(m.buf)-keep]; send != "" {
		m.emit(send)
		m.buf = m.buf[len(send):]
	}
}

// Interrupt sends SIGINT to the processes of the shell's group but the
// shell (which traps it).
func (b *bashShell) Interrupt() error {
	pgid := b.cmd.Process.Pid
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			syscall.Kill(pid, syscall.SIGINT)
		}
	}
	return nil
}

// Close kills the shell's process group.
func (b *bashShell) Close() error {
	b.kill()
	return os.RemoveAll(b.dir)
}

func randomMark() string { return newContextID() }
