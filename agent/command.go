package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"golang.org/x/sys/unix"
)

// drainGrace is how long a command's output may stay quiet, once the
// command has exited, before the agent stops reading it: background
// children that inherited its stdout would otherwise keep it from ever
// ending. Output that keeps coming keeps being read.
const drainGrace = 250 * time.Millisecond

// pumpBuffer is the size of each read of a command's output, and
// pipeSize the size asked for its pipes.
const (
	pumpBuffer = 256 << 10
	pipeSize   = 1 << 20
)

// pumpPace is how long a pump waits, after a read that did not fill its
// buffer, before it reads again: a busy command's small writes gather in
// the pipe meanwhile, and one read takes them all. In gVisor, waking for
// each of them (8 KiB at a time from coreutils) costs more than it moves.
// The stream flushes every flushDelay anyway, so output is not later to
// the client.
const pumpPace = time.Millisecond

// command is a process the agent started, on pipes or on a terminal, in its
// own process group, and what became of it.
type command struct {
	pid   int
	tag   string
	info  apiv1.CommandInfo // as started; snapshot adds how it ended
	argv  []string          // as launched
	env   map[string]string // what the request added to its environment
	out   *output
	stdin *os.File // its stdin pipe, or its terminal; nil when it has no stdin
	tty   *os.File // a PTY's terminal (master side)

	stdinMu sync.Mutex    // serializes writes to stdin
	exited  chan struct{} // closed once the process has exited
	done    chan struct{} // closed once it has ended: exited and its output all read

	mu       sync.Mutex
	status   syscall.WaitStatus // once exited
	endedAt  time.Time          // once exited
	killedBy string             // why the agent killed it: the end's Error
}

// stream is one of a command's outputs, read until it ends.
type stream struct {
	name string // stdout or stderr
	f    *os.File
}

// run follows the command from its start to its end: it reads its output
// into the buffer, gets its exit status from the reaper, kills it at its
// timeout, and moves it to the ended commands of procs.
func (c *command) run(exit <-chan syscall.WaitStatus, outputs []stream, timeout time.Duration, procs *table) {
	stopTimer := func() bool { return false }
	if timeout > 0 {
		stopTimer = time.AfterFunc(timeout, func() { c.kill(fmt.Sprintf("timed out after %s", timeout)) }).Stop
	}
	var pumps sync.WaitGroup
	for _, s := range outputs {
		pumps.Go(func() { c.pump(s) })
	}
	status := <-exit
	stopTimer() // what it left running in the background is not timed
	c.mu.Lock()
	c.status, c.endedAt = status, time.Now().UTC()
	c.mu.Unlock()
	close(c.exited)
	procs.retire(c)
	for _, s := range outputs {
		s.f.SetReadDeadline(time.Now().Add(drainGrace))
	}
	pumps.Wait()
	for _, s := range outputs {
		s.f.Close()
	}
	if c.stdin != nil {
		c.stdin.Close()
	}
	c.out.close()
	close(c.done)
}

// pump reads one output into the buffer until it ends, or stays quiet for
// drainGrace after the command exited.
func (c *command) pump(s stream) {
	buf := make([]byte, pumpBuffer)
	for {
		select {
		case <-c.exited:
			s.f.SetReadDeadline(time.Now().Add(drainGrace))
		default:
		}
		n, err := s.f.Read(buf)
		if n > 0 {
			c.out.write(s.name, buf[:n])
		}
		if err != nil {
			return
		}
		if n < len(buf) && c.running() {
			time.Sleep(pumpPace)
		}
	}
}

// running reports whether the process has yet to exit.
func (c *command) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// snapshot describes the command as it is now.
func (c *command) snapshot() apiv1.CommandInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	info := c.info
	info.Running = c.endedAt.IsZero()
	if !info.Running {
		code, sig := exitOf(c.status)
		ended := c.endedAt
		info.ExitCode, info.Signal, info.EndedAt = &code, sig, &ended
	}
	return info
}

// startEvent and endEvent open and close the command's stream.
func (c *command) startEvent() apiv1.CommandEvent {
	return apiv1.CommandEvent{Type: "start", PID: c.pid, Tag: c.tag}
}

func (c *command) endEvent() apiv1.CommandEvent {
	info := c.snapshot()
	e := apiv1.CommandEvent{Type: "end", ExitCode: info.ExitCode, Signal: info.Signal}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.status.Signaled() && c.status.Signal() == syscall.SIGKILL {
		e.Error = c.killedBy
	}
	return e
}

// exitOf is an exit status as the API shows it: the exit code, or -1 and
// the signal's name without SIG.
func exitOf(ws syscall.WaitStatus) (int, string) {
	if ws.Signaled() {
		return -1, strings.TrimPrefix(unix.SignalName(ws.Signal()), "SIG")
	}
	return ws.ExitStatus(), ""
}

// kill sends SIGKILL to the command's whole process group, which reaches
// its background children too, even after it exited; reason becomes the
// end's Error.
func (c *command) kill(reason string) {
	c.mu.Lock()
	if c.killedBy == "" && c.endedAt.IsZero() {
		c.killedBy = reason
	}
	c.mu.Unlock()
	syscall.Kill(-c.pid, syscall.SIGKILL)
}

// signal sends sig to the command's process group.
func (c *command) signal(sig syscall.Signal) error {
	if !c.running() {
		return conflict("command %d has exited", c.pid)
	}
	if err := syscall.Kill(-c.pid, sig); err != nil {
		return conflict("command %d: %v", c.pid, err)
	}
	return nil
}

// writeStdin copies r to the command's stdin.
func (c *command) writeStdin(r io.Reader) error {
	if c.stdin == nil {
		return conflict("command %d was started without stdin", c.pid)
	}
	c.stdinMu.Lock()
	defer c.stdinMu.Unlock()
	if _, err := io.Copy(c.stdin, r); err != nil {
		if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EIO) {
			return conflict("command %d: its stdin is closed", c.pid)
		}
		return fmt.Errorf("writing to the stdin of command %d: %w", c.pid, err)
	}
	return nil
}

// closeStdin makes the command read end of file: the pipe closes, and a
// terminal gets ^D (EOF at the start of a line).
func (c *command) closeStdin() error {
	if c.stdin == nil {
		return conflict("command %d was started without stdin", c.pid)
	}
	if c.tty != nil {
		return c.writeStdin(strings.NewReader("\x04"))
	}
	if err := c.stdin.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
