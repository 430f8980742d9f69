package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentbin"
	"github.com/sbxdev/sbx/template"
	"golang.org/x/sys/unix"
)

// AgentMount is where the agent binary appears inside every sandbox.
const AgentMount = "/.sbx/sbx"

// DefaultAgent is the agent serve runs in its sandboxes: the agent-only
// build this sbx carries (package agentbin), installed in dataDir as
// installAgent installs any, or, for a build that carries none, this
// binary itself (its `sbx agent`).
func DefaultAgent(dataDir string) (string, error) {
	r, ok, err := agentbin.Open()
	if err != nil {
		return "", fmt.Errorf("the agent this sbx carries: %w", err)
	}
	if ok {
		return installAgent(dataDir, r)
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the sbx binary to run as the sandboxes' agent: %w", err)
	}
	return self, nil
}

// installAgentFile is installAgent of the binary at path.
func installAgentFile(dataDir, path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("the agent binary: %w", err)
	}
	defer f.Close()
	return installAgent(dataDir, f)
}

// installAgent copies the agent binary read from r to
// <dataDir>/agent/sbx-<sha256>, once. Bundles name that copy, which never
// changes: a sandbox hibernated under one sbx binary wakes under the next
// with the agent it was started with.
func installAgent(dataDir string, r io.Reader) (string, error) {
	dir := filepath.Join(dataDir, "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".sbx-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(tmp, h), r); err != nil {
		tmp.Close()
		return "", fmt.Errorf("the agent binary: %w", err)
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "sbx-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(dst); err == nil {
		return dst, nil // installed before; a running sandbox may map it
	}
	return dst, os.Rename(tmp.Name(), dst)
}

// removeUnusedAgents removes the copies of earlier agent binaries that no
// sandbox's or snapshot's bundle names: a hibernated sandbox wakes with the
// copy it was started with, and a snapshot restores with its source's, so
// that one stays while they do. It runs when the
// provider opens, before any sandbox is created.
func (p *Provider) removeUnusedAgents() error {
	copies, err := filepath.Glob(filepath.Join(p.cfg.DataDir, "agent", "sbx-*"))
	if err != nil || len(copies) == 0 {
		return err
	}
	used := map[string]bool{p.agent: true}
	ids, err := p.sandboxIDs()
	if err != nil {
		return err
	}
	bundles := p.snapshotBundles() // a restore repeats its snapshot's mounts
	for _, id := range ids {
		var spec specs.Spec
		if err := readJSON(filepath.Join(p.bundleDir(id), "config.json"), &spec); err != nil {
			continue // no bundle: nothing of it runs
		}
		bundles = append(bundles, spec)
	}
	for _, spec := range bundles {
		for _, m := range spec.Mounts {
			if m.Destination == AgentMount {
				used[m.Source] = true
			}
		}
	}
	var errs []error
	for _, c := range copies {
		if !used[c] {
			errs = append(errs, os.Remove(c))
		}
	}
	return errors.Join(errs...)
}

// tokenFD is the descriptor on which the agent reads its access token: a
// pipe that runsc passes into the sandbox (`--pass-fd`, runc's
// `--preserve-fds`) when it starts, holding the token; the agent reads it to
// its end and closes it before anything else runs. So the token is in no
// environment, argv or file of the sandbox, nor in the bundle on the host.
// A wake restores the agent with the token in its memory, and serve gives
// it a new one through POST /token.
const tokenFD = 3

// agentTokenTimeout bounds how long watchToken waits for the agent to take
// its token: the agent's start, which reads it first.
const agentTokenTimeout = 30 * time.Second

// withAgent makes the agent the sandbox's first process: its binary
// mounted read-only, told to read its access token on tokenFD, the
// template's default user (commands, PTYs and new files belong to it unless
// a request names another), working directory and start command, if any,
// for it to start at boot. A wake restores the agent from its checkpoint
// with this same spec, so the start command runs once per sandbox, not
// once per wake.
func withAgent(s *specs.Spec, binary string, t template.Template) {
	s.Mounts = append(s.Mounts, specs.Mount{Destination: AgentMount, Type: "bind", Source: binary, Options: []string{"bind", "ro"}})
	s.Process.Args = []string{AgentMount, "agent", "--port", fmt.Sprint(apiv1.AgentPort), "--token-fd", fmt.Sprint(tokenFD)}
	for _, f := range [][2]string{{"--user", t.User}, {"--workdir", t.Workdir}, {"--start", t.StartCmd}} {
		if f[1] != "" {
			s.Process.Args = append(s.Process.Args, f[0], f[1])
		}
	}
}

// tokenPipe is a pipe holding token and a newline, for the agent to read on
// tokenFD (r); w stays open for tokenTaken.
func tokenPipe(token string) (r, w *os.File, err error) {
	if r, w, err = os.Pipe(); err != nil {
		return nil, nil, err
	}
	if _, err = w.WriteString(token + "\n"); err != nil {
		r.Close()
		w.Close()
		return nil, nil, fmt.Errorf("handing the agent its token: %w", err)
	}
	return r, w, nil
}

// watchToken watches, in the background, for sandbox id's agent to take its
// token from the pipe whose write end is w (tokenTaken), then closes w.
// Until then gVisor holds a host file for the agent's descriptor, and a
// checkpoint taken meanwhile would never restore (runsc restore takes no
// --pass-fd): Hibernate waits for it (awaitToken). A create need not: the
// agent takes its token as it starts, which a create's caller waits for
// anyway (the agent's /ready).
func (p *Provider) watchToken(id string, w *os.File) {
	t := &tokenWatch{done: make(chan struct{})}
	p.tokens.Store(id, t)
	go func() {
		defer close(t.done)
		defer w.Close()
		if t.err = tokenTaken(w, agentTokenTimeout); t.err == nil {
			p.tokens.CompareAndDelete(id, t) // nothing to wait for; a failure stays for Hibernate to tell
		}
	}()
}

// tokenWatch is watchToken's outcome for one sandbox: done closes once the
// agent took its token (err nil) or the wait gave up.
type tokenWatch struct {
	done chan struct{}
	err  error
}

// awaitToken waits until sandbox id's agent has taken its token, if this
// provider started it and it has yet to: a checkpoint can be taken.
func (p *Provider) awaitToken(ctx context.Context, id string) error {
	v, ok := p.tokens.Load(id)
	if !ok {
		return nil // started by an earlier serve, long since
	}
	t := v.(*tokenWatch)
	select {
	case <-t.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if t.err != nil {
		return fmt.Errorf("cannot checkpoint the sandbox: %w", t.err)
	}
	return nil
}

// tokenTaken waits, at most timeout, until no reader holds the token pipe
// whose write end is w (every other copy of the read end closed): the agent
// has read its token and closed its descriptor.
func tokenTaken(w *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	fds := []unix.PollFd{{Fd: int32(w.Fd())}}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("the sandbox's agent did not take its access token within %s", timeout)
		}
		fds[0].Revents = 0
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return fmt.Errorf("waiting for the agent to take its token: %w", err)
		case n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0:
			return nil
		}
	}
}

// AgentAddr implements sbx.AgentDialer: the agent listens on the sandbox's
// own address.
func (p *Provider) AgentAddr(ctx context.Context, h sbx.Handle) (string, error) {
	if p.agent == "" {
		return "", sbx.Errorf(sbx.EUnsupported, "this local provider runs no agent in its sandboxes")
	}
	return p.PortAddr(ctx, h, apiv1.AgentPort)
}

// PortAddr implements sbx.PortDialer: the sandbox's own address, which the
// host routes to.
func (p *Provider) PortAddr(ctx context.Context, h sbx.Handle, port int) (string, error) {
	id, err := handleID(h)
	if err != nil {
		return "", err
	}
	if p.cfg.Network == nil {
		return "", sbx.Errorf(sbx.EUnsupported, "this local provider gives its sandboxes no network")
	}
	a, ok := p.cfg.Network.Get(id)
	if !ok {
		return "", sbx.Errorf(sbx.ENotFound, "sandbox %s has no network on this host", id)
	}
	return net.JoinHostPort(a.Addr.Addr().String(), strconv.Itoa(port)), nil
}
