package agent

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// process is the process of a context's interpreter that the agent runs
// itself (bash.go, node.go; a Jupyter kernel is package kernel's): in a
// process group of its own, as the context's user, in its directory, with
// its environment, reaped by the agent's reaper.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // why it ended, once exited is closed
}

// contextEnv is the account and environment c's interpreter runs with.
func (a *Agent) contextEnv(c *codeContext) (*account, []string, error) {
	acct, err := a.lookupAccount(c.info.User)
	if err != nil {
		return nil, nil, err
	}
	env, err := a.childEnv(acct, c.env)
	return acct, env, err
}

// command is argv as c's interpreter, its pipes for the caller to set.
func (a *Agent) command(c *codeContext, argv ...string) (*exec.Cmd, *account, error) {
	acct, env, err := a.contextEnv(c)
	if err != nil {
		return nil, nil, err
	}
	path, err := lookPath(argv[0], env, c.info.Cwd)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not in this sandbox's template", argv[0])
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: c.info.Cwd, Env: env, SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Credential: acct.cred}}
	return cmd, acct, nil
}

// start starts cmd through the agent's reaper.
func (a *Agent) start(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, exited: make(chan struct{})}
	exit, err := a.reaper.start(func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", filepath.Base(cmd.Path), err)
	}
	go func() {
		ws := <-exit
		p.err = fmt.Errorf("%s exited with status %d", filepath.Base(cmd.Path), ws.ExitStatus())
		close(p.exited)
	}()
	return p, nil
}

// kill kills the process's group and waits, a while, for its end.
func (p *process) kill() {
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
	}
	p.cmd.Process.Release()
}
