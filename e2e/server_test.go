package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// server is a running `sbx serve` process.
type server struct {
	t       *testing.T
	dataDir string
	compute string // the Memory provider's state directory
	addr    string
	sshAddr string // the SSH gateway's
	url     string
	key     string
	opts    serverOpts
	cmd     *exec.Cmd
	out     *syncBuffer // stdout and stderr
	exited  chan error
	http    *http.Client
}

type serverOpts struct {
	createDelay time.Duration
	bin         string   // default: this test binary as serve with the Memory provider
	args        []string // extra serve flags
	env         []string // extra variables of serve's environment
	// tls, when set, is the client side of serve's --tls-cert: the server
	// is reached over HTTPS with it.
	tls *tls.Config
}

// startServer starts a server on a fresh data directory.
func startServer(t *testing.T, opts serverOpts) *server {
	t.Helper()
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = opts.tls
	s := &server{t: t, dataDir: t.TempDir(), compute: t.TempDir(), opts: opts,
		http: &http.Client{Transport: validator.Transport(base), Timeout: 30 * time.Second}}
	s.addr, s.sshAddr = freeAddr(t), freeAddr(t)
	s.url = "http://" + s.addr
	if opts.tls != nil {
		s.url = "https://" + s.addr
	}
	s.start()
	t.Cleanup(func() { s.stop(syscall.SIGKILL) })
	key, err := os.ReadFile(filepath.Join(s.dataDir, "admin.key"))
	if err != nil {
		t.Fatalf("admin key: %v", err)
	}
	s.key = strings.TrimSpace(string(key))
	return s
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// start runs the process and waits until it answers /healthz.
func (s *server) start() {
	s.t.Helper()
	bin, env := os.Args[0], append(os.Environ(), serveEnv+"=1", "SBX_MEMORY_STATE_DIR="+s.compute,
		"SBX_MEMORY_CREATE_DELAY="+s.opts.createDelay.String())
	args := []string{"serve", "--data-dir", s.dataDir, "--listen", s.addr, "--ssh-listen", s.sshAddr, "--log-level", "debug"}
	if s.opts.bin != "" {
		bin, env = s.opts.bin, os.Environ()
	} else {
		args = append(args, "--provider", "memory")
	}
	env = append(env, s.opts.env...)
	s.out = &syncBuffer{}
	s.cmd = exec.Command(bin, append(args, s.opts.args...)...)
	s.cmd.Env, s.cmd.Stdout, s.cmd.Stderr = env, s.out, s.out
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.exited = make(chan error, 1)
	go func() { s.exited <- s.cmd.Wait() }()
	// A hang guard: a first start with the local provider builds the base
	// template, which takes minutes on a slow mirror while other packages'
	// tests build theirs.
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			s.t.Fatalf("sbx serve exited at start: %v\n%s", err, s.out)
		default:
		}
		if resp, err := s.http.Get(s.url + "/healthz"); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("sbx serve did not answer within 10 minutes\n%s", s.out)
}

// stop signals the process and waits for it; it returns the exit error.
func (s *server) stop(sig syscall.Signal) error {
	if s.cmd == nil || s.cmd.ProcessState != nil {
		return nil
	}
	s.cmd.Process.Signal(sig)
	select {
	case err := <-s.exited:
		s.cmd = nil
		return err
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		s.t.Fatalf("sbx serve ignored %s\n%s", sig, s.out)
		return nil
	}
}

// restart starts the process again on the same data directory.
func (s *server) restart(opts serverOpts) {
	s.t.Helper()
	s.stop(syscall.SIGKILL)
	s.opts = opts
	s.start()
}

// do sends a request with the admin key and returns the status and body.
func (s *server) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	return s.doKey(s.key, method, path, body)
}

func (s *server) doKey(key, method, path string, body any) (int, []byte) {
	s.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, s.url+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, data
}

// call sends a request that must answer want, and decodes the answer into out.
func (s *server) call(method, path string, body any, want int, out any) {
	s.t.Helper()
	status, data := s.do(method, path, body)
	if status != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, data)
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero() // fields the answer omits must not survive from earlier calls
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// fail sends a request that must fail with status; it returns the envelope.
func (s *server) fail(method, path string, body any, status int, detail string) apiv1.Error {
	s.t.Helper()
	return s.failKey(s.key, method, path, body, status, detail)
}

func (s *server) failKey(key, method, path string, body any, status int, detail string) apiv1.Error {
	s.t.Helper()
	got, data := s.doKey(key, method, path, body)
	var e apiv1.Error
	if err := json.Unmarshal(data, &e); err != nil {
		s.t.Fatalf("%s %s: not an error envelope: %s", method, path, data)
	}
	if got != status || e.Code != status || !strings.Contains(e.Detail, detail) {
		s.t.Fatalf("%s %s: %d %q, want %d containing %q", method, path, got, e.Detail, status, detail)
	}
	return e
}

// create makes a sandbox and returns it.
func (s *server) create(body map[string]any) apiv1.Sandbox {
	s.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if body["templateID"] == nil {
		body["templateID"] = "base"
	}
	var sb apiv1.Sandbox
	s.call("POST", "/api/v1/sandboxes", body, http.StatusCreated, &sb)
	return sb
}

func (s *server) get(id string) apiv1.Sandbox {
	s.t.Helper()
	var sb apiv1.Sandbox
	s.call("GET", "/api/v1/sandboxes/"+id, nil, http.StatusOK, &sb)
	return sb
}

// waitFor polls a sandbox until cond holds, for at most 15 s.
func (s *server) waitFor(id string, what string, cond func(apiv1.Sandbox) bool) apiv1.Sandbox {
	s.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		sb := s.get(id)
		if cond(sb) {
			return sb
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("sandbox %s never became %s: %+v", id, what, sb)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func state(want string) func(apiv1.Sandbox) bool {
	return func(sb apiv1.Sandbox) bool { return sb.State == want }
}

// syncBuffer is a bytes.Buffer safe for a process's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runSuite runs an SDK's own test suite (argv, in dir, with env added to
// this process's) against s, bounded by a hang guard; it fails with the
// suite's output and serve's log, else logs the output.
func (s *server) runSuite(t *testing.T, name, dir string, env []string, argv ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a hang guard
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s failed: %v\n%s\nserve's log:\n%s", name, err, out, s.out)
	}
	t.Logf("%s:\n%s", name, out)
}
