package agent

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"golang.org/x/sys/unix"
)

// launch is what to start: the parts a command and a PTY share.
type launch struct {
	argv    []string
	env     map[string]string
	cwd     string
	user    string
	tag     string
	stdin   bool              // pipes only: keep stdin open
	pty     *apiv1.PtySize    // run on a new terminal of this size
	timeout time.Duration     // 0: none
	info    apiv1.CommandInfo // Cmd and Args as asked for
}

// startCommand starts what POST /commands asks for.
func (a *Agent) startCommand(req apiv1.StartCommandRequest) (*command, error) {
	if (req.Cmd == "") == (len(req.Args) == 0) {
		return nil, invalid("give exactly one of cmd and args")
	}
	if req.Timeout < 0 {
		return nil, invalid("timeout must be 0 (none) or more seconds")
	}
	argv := req.Args
	if req.Cmd != "" {
		argv = shellArgv(req.Cmd)
	}
	return a.launch(launch{
		argv: argv, env: req.Env, cwd: req.Cwd, user: req.User, tag: req.Tag, stdin: req.Stdin,
		timeout: time.Duration(req.Timeout) * time.Second,
		info:    apiv1.CommandInfo{Cmd: req.Cmd, Args: req.Args},
	})
}

// launch starts l in its own process group (a PTY: its own session) and
// registers it; the command then runs on its own, whatever becomes of the
// request that started it.
func (a *Agent) launch(l launch) (*command, error) {
	if err := checkTag(l.tag); err != nil {
		return nil, err
	}
	cwd, err := a.workingDir(l.cwd)
	if err != nil {
		return nil, err
	}
	acct, err := a.lookupAccount(l.user)
	if err != nil {
		return nil, err
	}
	env, err := a.childEnv(acct, l.env)
	if err != nil {
		return nil, err
	}
	path, lookErr := lookPath(l.argv[0], env, cwd)
	if len(l.argv) == 1 && l.argv[0] == apiv1.SFTPServer && self != "" {
		path, lookErr = self, nil // the agent's own SFTP server (sftp.go)
	}
	if lookErr != nil && !errors.Is(lookErr, errNotOnPath) {
		return nil, lookErr
	}
	if err := a.procs.reserve(l.tag); err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: l.argv, Env: env, Dir: cwd, SysProcAttr: &syscall.SysProcAttr{Credential: acct.cred}}
	var w *wiring
	if l.pty != nil {
		w, err = ptyWiring(cmd, *l.pty)
	} else {
		w, err = pipeWiring(cmd, l.stdin)
	}
	if err != nil {
		a.procs.unreserve(l.tag)
		return nil, err
	}
	exit, err := a.reaper.start(func() (int, error) {
		started, err := startOrReport(cmd, l.argv[0], lookErr) // exits 127 or 126 for a program it cannot run
		if err != nil {
			return 0, err
		}
		cmd = started
		return cmd.Process.Pid, nil
	})
	w.closeChild()
	if err != nil {
		a.procs.unreserve(l.tag)
		w.closeParent()
		return nil, startError(l.argv[0], err)
	}
	c := &command{
		pid: cmd.Process.Pid, tag: l.tag, info: l.info, argv: l.argv, env: l.env, out: newOutput(outputLimit),
		stdin: w.stdin, tty: w.tty, exited: make(chan struct{}), done: make(chan struct{}),
	}
	c.info.PID, c.info.Tag, c.info.Cwd, c.info.User, c.info.Pty = c.pid, l.tag, cwd, acct.name, l.pty != nil
	c.info.StartedAt = time.Now().UTC()
	added := a.procs.add(c) // before run, which retires it
	go func() {
		c.run(exit, w.outputs, l.timeout, a.procs)
		cmd.Process.Release() // its exit came from the reaper; this frees its pidfd
	}()
	if added != nil {
		c.kill("the agent closed")
		return nil, added
	}
	a.log.Debug("started", "pid", c.pid, "tag", c.tag, "argv", l.argv, "pty", c.info.Pty)
	return c, nil
}

// startError describes a process that could not start.
func startError(name string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return apiError(http.StatusForbidden, "starting %s: %v", quote(name), unwrapPath(err))
	}
	return invalid("starting %s: %v", quote(name), unwrapPath(err))
}

// shellArgv runs a command line with bash as a login shell, or sh.
func shellArgv(line string) []string {
	if _, err := os.Stat("/bin/bash"); err == nil {
		return []string{"/bin/bash", "-l", "-c", line}
	}
	return []string{"/bin/sh", "-c", line}
}

// wiring is how a process is connected to the agent: the parent's ends,
// and the child's, which the parent closes once the child has them.
type wiring struct {
	outputs []stream
	stdin   *os.File // nil: no stdin
	tty     *os.File // a PTY's master side
	child   []*os.File
}

func (w *wiring) closeChild() {
	for _, f := range w.child {
		f.Close()
	}
}

func (w *wiring) closeParent() {
	for _, s := range w.outputs {
		s.f.Close()
	}
	if w.stdin != nil {
		w.stdin.Close()
	}
}

// pipeWiring gives cmd its own process group, pipes for stdout and stderr,
// and a pipe for stdin when it keeps stdin open (else /dev/null).
func pipeWiring(cmd *exec.Cmd, stdin bool) (*wiring, error) {
	cmd.SysProcAttr.Setpgid = true
	w := &wiring{}
	for _, name := range []string{"stdout", "stderr"} {
		r, wr, err := os.Pipe()
		if err != nil {
			w.closeChild()
			w.closeParent()
			return nil, err
		}
		growPipe(r)
		w.outputs = append(w.outputs, stream{name: name, f: r})
		w.child = append(w.child, wr)
	}
	cmd.Stdout, cmd.Stderr = w.child[0], w.child[1]
	if stdin {
		r, wr, err := os.Pipe()
		if err != nil {
			w.closeChild()
			w.closeParent()
			return nil, err
		}
		cmd.Stdin, w.stdin = r, wr
		w.child = append(w.child, r)
	}
	return w, nil
}

// growPipe asks for a pipe of pipeSize, so that a busy writer fills it
// while the pump paces its reads; a smaller one is fine too.
func growPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
	}
}
