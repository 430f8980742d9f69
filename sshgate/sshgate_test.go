package sshgate_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/agenttest"
	"github.com/sbxdev/sbx/sshauth"
	"github.com/sbxdev/sbx/sshgate"
	"golang.org/x/crypto/ssh"
)

// gate is serve's stack in-process (real agents on loopback) with an SSH
// gateway in front of it.
type gate struct {
	t       *testing.T
	ctx     context.Context
	st      *agenttest.Stack
	api     *client.Client
	auth    *sshauth.Service
	owner   sbx.Caller
	addr    string
	hostKey ssh.PublicKey
}

func newGate(t *testing.T) *gate {
	t.Helper()
	st := agenttest.Serve(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	owner, err := st.Store.Authenticate(ctx, st.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &gate{t: t, ctx: ctx, st: st, api: client.New(client.Options{URL: st.URL, APIKey: st.Key}),
		auth: sshauth.New(st.Store, authz.Policy{Store: st.Store}, st.Manager, sbx.SystemClock{}), owner: owner,
		addr: st.SSHAddr, hostKey: st.SSHHostKey}
}

// sandbox makes a running sandbox.
func (g *gate) sandbox() *client.Sandbox {
	g.t.Helper()
	sb, err := g.api.Create(g.ctx, "base", &client.CreateOptions{WaitReady: true})
	if err != nil {
		g.t.Fatal(err)
	}
	return sb
}

// key makes a key pair and registers its public half to the owner's
// default project.
func (g *gate) key() ssh.Signer {
	g.t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		g.t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		g.t.Fatal(err)
	}
	if _, err := g.auth.AddKey(g.ctx, g.owner, sshauth.KeySpec{PublicKey: string(ssh.MarshalAuthorizedKey(s.PublicKey())), Name: "test",
		ProjectID: g.owner.Project.ID}); err != nil {
		g.t.Fatal(err)
	}
	return s
}

// dial connects as user with auth.
func (g *gate) dial(user string, auth ...ssh.AuthMethod) (*ssh.Client, error) {
	return ssh.Dial("tcp", g.addr, &ssh.ClientConfig{User: user, Auth: auth, HostKeyCallback: ssh.FixedHostKey(g.hostKey), Timeout: 30 * time.Second})
}

func (g *gate) mustDial(user string, auth ...ssh.AuthMethod) *ssh.Client {
	g.t.Helper()
	c, err := g.dial(user, auth...)
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { c.Close() })
	return c
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A command: stdin in, stdout and stderr apart, its exit status; env
// requests it takes; a terminal with its size and a window change; SFTP.
func TestSessions(t *testing.T) {
	g := newGate(t)
	sb, key := g.sandbox(), g.key()
	c := g.mustDial(sb.SandboxID(), ssh.PublicKeys(key))

	s, _ := c.NewSession()
	var out, errOut syncBuffer
	s.Stdin, s.Stdout, s.Stderr = strings.NewReader("hello\n"), &out, &errOut
	if err := s.Setenv("GREETING", "hi"); err != nil {
		t.Errorf("env: %v", err)
	}
	if err := s.Setenv("SBX_ACCESS_TOKEN", "x"); err == nil {
		t.Error("env SBX_ACCESS_TOKEN was taken")
	}
	err := s.Run(`tr a-z A-Z; echo "$GREETING" >&2; exit 3`)
	var exit *ssh.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 3 || out.String() != "HELLO\n" || errOut.String() != "hi\n" {
		t.Errorf("exec: %v; stdout %q stderr %q", err, out.String(), errOut.String())
	}

	// A command that ends while the client's stdin is still open (a
	// terminal's, say) ends the session all the same.
	s, _ = c.NewSession()
	open, keep := io.Pipe()
	defer keep.Close()
	s.Stdin = open
	done := make(chan error, 1)
	go func() { done <- s.Run("echo hi; exit 2") }()
	select {
	case err := <-done:
		if !errors.As(err, &exit) || exit.ExitStatus() != 2 {
			t.Errorf("with stdin open: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a command that ended with stdin open did not end its session")
	}

	// A signal reaches the program; its end is an exit-signal.
	s, _ = c.NewSession()
	out = syncBuffer{}
	s.Stdout = &out
	if err := s.Start("echo sleeping; sleep 60"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "sleeping")
	if err := s.Signal(ssh.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); !errors.As(err, &exit) || exit.Signal() != "TERM" {
		t.Errorf("signalled: %v", err)
	}

	s, _ = c.NewSession()
	out = syncBuffer{}
	s.Stdin, s.Stdout = strings.NewReader("echo shell without a terminal; exit 6\n"), &out
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(); !errors.As(err, &exit) || exit.ExitStatus() != 6 || out.String() != "shell without a terminal\n" {
		t.Errorf("a shell without a terminal: %v; output %q", err, out.String())
	}

	s, _ = c.NewSession()
	out = syncBuffer{}
	s.Stdout = &out
	if err := s.RequestPty("xterm", 24, 80, ssh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	in, _ := s.StdinPipe()
	if err := s.Shell(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "tty; stty size\n")
	waitFor(t, &out, "24 80")
	if err := s.WindowChange(50, 120); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	io.WriteString(in, "stty size; exit 7\n")
	err = s.Wait()
	if !errors.As(err, &exit) || exit.ExitStatus() != 7 || !strings.Contains(out.String(), "/dev/pts/") || !strings.Contains(out.String(), "50 120") {
		t.Errorf("terminal: %v; output %q", err, out.String())
	}

	fc, err := sftp.NewClient(c)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	data := bytes.Repeat([]byte("sbx!"), 1<<18)
	f, err := fc.Create("up.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := fc.Open("up.bin")
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(back, data) {
		t.Errorf("sftp: %d bytes back, %v", len(back), err)
	}
	s, _ = c.NewSession()
	if got, err := s.Output("wc -c < up.bin"); err != nil || strings.TrimSpace(string(got)) != strconv.Itoa(len(data)) {
		t.Errorf("the file in the sandbox: %q %v", got, err)
	}
}

// waitFor waits until out holds want.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", want, out.String())
		}
	}
}

// Local forwarding reaches a port of the sandbox; the agent's port, another
// host and a port nothing listens on are refused, saying why.
func TestLocalForwarding(t *testing.T) {
	g := newGate(t)
	sb, key := g.sandbox(), g.key()
	c := g.mustDial(sb.SandboxID(), ssh.PublicKeys(key))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "from the sandbox") }))
	defer web.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(web.URL, "http://"))
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		return c.DialContext(ctx, "tcp", addr)
	}}}
	resp, err := hc.Get("http://localhost:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "from the sandbox" {
		t.Errorf("forwarded: %q", body)
	}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	for _, c2 := range []struct{ addr, want string }{
		{"localhost:49983", "port 49983 is sbx's agent"},
		{"example.com:80", "sbx forwards to the ports of the sandbox only"},
		{"localhost:" + strconv.Itoa(closedPort), "no process listens on port " + strconv.Itoa(closedPort) + " in sandbox " + sb.SandboxID()},
	} {
		if _, err := c.Dial("tcp", c2.addr); err == nil || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("%s: %v, want %q", c2.addr, err, c2.want)
		}
	}
}

// Who gets in: a registered key, a token of the sandbox (as the password
// or the keyboard-interactive answer); a key registered nowhere, a wrong or
// expired token, a token of another sandbox, a sandbox that does not
// exist, a name that is no sandbox's: all the same refusal.
func TestAuthentication(t *testing.T) {
	g := newGate(t)
	sb, other, key := g.sandbox(), g.sandbox(), g.key()
	_, strangerKey, _ := ed25519.GenerateKey(rand.Reader)
	stranger, _ := ssh.NewSignerFromKey(strangerKey)
	_, token, _, err := g.auth.MintToken(g.ctx, g.owner, sb.SandboxID(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(secret string) ssh.AuthMethod {
		return ssh.KeyboardInteractive(func(name, instruction string, questions []string, echos []bool) ([]string, error) {
			if len(questions) != 1 || questions[0] != "sbx token: " || echos[0] {
				return nil, errors.New("unexpected questions")
			}
			return []string{secret}, nil
		})
	}
	for _, c := range []struct {
		what string
		user string
		auth ssh.AuthMethod
	}{
		{"a registered key", sb.SandboxID(), ssh.PublicKeys(key)},
		{"a registered key, by UUID", sb.ID(), ssh.PublicKeys(key)},
		{"the token as the password", sb.SandboxID(), ssh.Password(token)},
		{"the token as the keyboard-interactive answer", sb.SandboxID(), answer(token)},
	} {
		cl, err := g.dial(c.user, c.auth)
		if err != nil {
			t.Errorf("%s: %v", c.what, err)
			continue
		}
		s, _ := cl.NewSession()
		if out, err := s.Output("echo in"); err != nil || string(out) != "in\n" {
			t.Errorf("%s: %q %v", c.what, out, err)
		}
		cl.Close()
	}
	for _, c := range []struct {
		what string
		user string
		auth ssh.AuthMethod
	}{
		{"a key registered nowhere", sb.SandboxID(), ssh.PublicKeys(stranger)},
		{"a wrong token", sb.SandboxID(), ssh.Password(token + "0")},
		{"the token of another sandbox", other.SandboxID(), ssh.Password(token)},
		{"a sandbox that does not exist", "inosuchsandbox", ssh.PublicKeys(key)},
		{"a name that is no sandbox's", "../../etc", ssh.PublicKeys(key)},
		{"an API key as a password", sb.SandboxID(), ssh.Password(g.st.Key)},
	} {
		if cl, err := g.dial(c.user, c.auth); err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
			if cl != nil {
				cl.Close()
			}
			t.Errorf("%s: %v, want unable to authenticate", c.what, err)
		}
	}
	time.Sleep(5 * time.Second)
	if cl, err := g.dial(sb.SandboxID(), ssh.Password(token)); err == nil {
		cl.Close()
		t.Error("an expired token got in")
	}
}

// A paused sandbox wakes for a session; one deleted meanwhile ends it with
// why and no exit status.
func TestWakesAndEndsWithTheSandbox(t *testing.T) {
	g := newGate(t)
	sb, key := g.sandbox(), g.key()
	if err := sb.Pause(g.ctx); err != nil {
		t.Fatal(err)
	}
	c := g.mustDial(sb.SandboxID(), ssh.PublicKeys(key))
	s, _ := c.NewSession()
	if out, err := s.Output("echo awake"); err != nil || string(out) != "awake\n" {
		t.Fatalf("on a paused sandbox: %q %v", out, err)
	}
	if info, err := sb.Info(g.ctx); err != nil || info.State != "running" {
		t.Fatalf("after: %+v %v", info, err)
	}
	s, _ = c.NewSession()
	var out, errOut syncBuffer
	s.Stdout, s.Stderr = &out, &errOut
	if err := s.Start("echo started; sleep 60"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &out, "started")
	if err := sb.Delete(g.ctx); err != nil {
		t.Fatal(err)
	}
	err := s.Wait()
	var missing *ssh.ExitMissingError
	if !errors.As(err, &missing) || !strings.Contains(errOut.String(), "sbx: sandbox "+sb.SandboxID()+" was deleted") {
		t.Errorf("deleted meanwhile: %v; stderr %q", err, errOut.String())
	}
	s, _ = c.NewSession()
	errOut = syncBuffer{}
	s.Stderr = &errOut
	if err := s.Run("true"); !errors.As(err, &missing) || !strings.Contains(errOut.String(), "sbx: sandbox "+sb.SandboxID()+" is killed") {
		t.Errorf("a session on a deleted sandbox: %v; stderr %q", err, errOut.String())
	}
}

// The host key is made once and kept; a file that is not a key is refused,
// never replaced.
func TestHostKeyIsKept(t *testing.T) {
	path := filepath.Join(t.TempDir(), sshgate.HostKeyFile)
	first, err := sshgate.LoadHostKey(path)
	if err != nil {
		t.Fatal(err)
	}
	again, err := sshgate.LoadHostKey(path)
	if err != nil || !bytes.Equal(again.PublicKey().Marshal(), first.PublicKey().Marshal()) || first.PublicKey().Type() != ssh.KeyAlgoED25519 {
		t.Fatalf("loaded again: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the key file: %v %v", fi.Mode(), err)
	}
	line := sshgate.KnownHostsLine("127.0.0.1", 2222, first.PublicKey())
	if !strings.HasPrefix(line, "[127.0.0.1]:2222 ssh-ed25519 ") {
		t.Errorf("known_hosts line %q", line)
	}
	os.WriteFile(path, []byte("not a key"), 0o600)
	if _, err := sshgate.LoadHostKey(path); err == nil {
		t.Error("a garbled key file was taken")
	}
	if data, _ := os.ReadFile(path); string(data) != "not a key" {
		t.Error("a garbled key file was replaced")
	}
}
