package agent

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

// A command whose program cannot be executed ends as it would in a shell:
// it writes "sbx: NAME: command not found" (or why else) to its stderr and
// exits 127 when there is no such program, 126 when there is one that
// cannot be executed. As a shell forks a child that execs and, failing,
// reports and exits, the agent starts a copy of itself in the program's
// place that reports and exits before main: a real process with a PID,
// output and an exit status, whose stream, stdin, signals and kill work
// like any command's.

// execFailedArg0 is the argv[0] that makes this binary report and exit
// (see init): argv is [execFailedArg0, exit code, message].
const execFailedArg0 = "sbx-exec-failed"

func init() {
	if len(os.Args) == 3 && os.Args[0] == execFailedArg0 {
		code, _ := strconv.Atoi(os.Args[1])
		os.Stderr.WriteString(os.Args[2] + "\n")
		os.Exit(code)
	}
}

// errNotOnPath is a program name found in no directory of the command's PATH.
var errNotOnPath = errors.New("command not found")

// startOrReport starts cmd, whose program is name (cmd.Path empty when
// lookErr says it is not on PATH). When the program cannot be executed it
// starts instead a process that reports why and exits 127 or 126, and
// answers that one. Other failures (setting the user, resources) are
// answered as they are.
func startOrReport(cmd *exec.Cmd, name string, lookErr error) (*exec.Cmd, error) {
	err := lookErr
	if err == nil {
		if err = cmd.Start(); err == nil {
			return cmd, nil
		}
	}
	path := cmd.Path
	if !filepath.IsAbs(path) {
		path = filepath.Join(cmd.Dir, path) // as exec takes it
	}
	code, reason := execFailure(path, err)
	if code == 0 {
		return nil, err
	}
	attr := *cmd.SysProcAttr // its process group, session and terminal
	attr.Credential = nil    // the agent's own binary, run as the agent
	report := &exec.Cmd{
		Path: "/proc/self/exe", Args: []string{execFailedArg0, strconv.Itoa(code), "sbx: " + short(name) + ": " + reason},
		Env: []string{}, Dir: "/", Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr, SysProcAttr: &attr,
	}
	if report.Start() != nil {
		return nil, err // no /proc: the failure is the answer
	}
	return report, nil
}

// execFailure is the exit code and message of a shell whose exec of path
// failed with err: 127 for a program that is not there, 126 for one that
// cannot be executed; 0 for a failure that is not the program's.
func execFailure(path string, err error) (int, string) {
	if errors.Is(err, errNotOnPath) {
		return 127, "command not found"
	}
	errno, ok := errors.AsType[syscall.Errno](err)
	if !ok {
		return 0, ""
	}
	switch errno {
	case syscall.ENOENT:
		if _, serr := os.Stat(path); serr == nil {
			return 126, "bad interpreter: No such file or directory"
		}
		return 127, "No such file or directory"
	case syscall.EACCES:
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return 126, "Is a directory"
		}
		return 126, "Permission denied"
	case syscall.ENOEXEC:
		return 126, "cannot execute binary file: Exec format error"
	case syscall.EISDIR, syscall.ETXTBSY, syscall.ENOTDIR, syscall.ELOOP, syscall.ENAMETOOLONG, syscall.E2BIG:
		return 126, capitalized(errno.Error())
	}
	return 0, ""
}

// capitalized is an errno's text as shells print it.
func capitalized(s string) string {
	if s != "" && s[0] >= 'a' && s[0] <= 'z' {
		return string(s[0]-'a'+'A') + s[1:]
	}
	return s
}
