// Package dockertest is test support for the docker provider: a real
// Docker daemon (Debian's dockerd) shared by the tests of every package and
// every run on a host, and the agent binary its sandboxes run. Nothing here
// is linked into the sbx binary.
package dockertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/internal/testenv"
)

// Dir holds the shared test daemon: its socket, data root, exec root,
// pidfile, log and the lock its start is taken under.
const Dir = "/tmp/sbx-test-dockerd"

// Socket is the shared test daemon's socket.
const Socket = Dir + "/docker.sock"

// Host returns the Docker host the tests use: $SBX_TEST_DOCKER_HOST when
// set; else the shared test daemon, started (under a file lock, so
// packages' tests side by side start one) when its socket does not answer.
// It is left running for later tests and runs, as the shared templates are
// left built; `kill $(cat /tmp/sbx-test-dockerd/docker.pid)` stops it. It
// runs with --iptables=false: the host's firewall, which the local
// provider's tests also rule, stays as it is; this host reaches the
// containers on its bridge directly. Without root or dockerd the test is
// Missing (a failure in CI, a skip elsewhere).
func Host(t testing.TB) string {
	t.Helper()
	if h := os.Getenv("SBX_TEST_DOCKER_HOST"); h != "" {
		return h
	}
	if err := start(); err != nil {
		testenv.Missing(t, err.Error())
	}
	return "unix://" + Socket
}

var (
	once     sync.Once
	startErr error
)

func start() error {
	once.Do(func() { startErr = startDaemon() })
	return startErr
}

func startDaemon() error {
	if answers(Socket) {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("root, to start dockerd for the docker provider's tests")
	}
	path, err := exec.LookPath("dockerd")
	if err != nil {
		return fmt.Errorf("dockerd (Debian's docker.io) for the docker provider's tests")
	}
	if err := os.MkdirAll(Dir, 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(Dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	if answers(Socket) { // another package's test started it meanwhile
		return nil
	}
	logPath := filepath.Join(Dir, "dockerd.log")
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	os.Remove(Socket)
	cmd := exec.Command(path, "--host", "unix://"+Socket, "--data-root", filepath.Join(Dir, "data"),
		"--exec-root", filepath.Join(Dir, "exec"), "--pidfile", filepath.Join(Dir, "docker.pid"),
		"--iptables=false", "--ip6tables=false")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlives the test process
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting dockerd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for range 600 { // a start takes a second or two; at most a minute
		if answers(Socket) {
			return nil
		}
		select {
		case err := <-exited:
			tail, _ := os.ReadFile(logPath)
			return fmt.Errorf("a running dockerd: it exited (%v): %s", err, lastLines(string(tail), 10))
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("a running dockerd: it did not answer within a minute (its log: %s)", logPath)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// answers reports whether a daemon answers its ping on socket.
func answers(socket string) bool {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		}}}
	resp, err := c.Get("http://docker/_ping")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Agent builds the agent-only binary (cmd/sbx-agent), static, into dir
// and returns its path: what the provider's sandboxes run in the tests.
func Agent(dir string) (string, error) {
	bin := filepath.Join(dir, "sbx-agent")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/sbxdev/sbx/cmd/sbx-agent")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sbx-agent: %v\n%s", err, out)
	}
	return bin, nil
}
