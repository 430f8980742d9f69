package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/testenv"
)

// The client against the real agent, served in-process behind a stand-in
// for serve's proxy.

const (
	agentKey   = "sbx_agent_test_key"
	agentToken = "agent-test-token-0123456789abcdef0123"
	sandboxID  = "sbx-agent1"
	hangGuard  = time.Minute // only against hangs; nothing waits this long when it works
)

// newAgent serves an agent working in a temporary directory behind a proxy
// like serve's: it checks the API key, strips /api/v1/sandboxes/ID and adds
// the access token. It answers a client for the proxy and the directory.
func newAgent(t *testing.T) (*client.Client, string) {
	t.Helper()
	dir := t.TempDir()
	a, err := agent.New(agent.Config{Token: agentToken, Workdir: dir, Env: testenv.AgentEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	api := http.StripPrefix("/api/v1/sandboxes/"+sandboxID, a.Handler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+agentKey {
			http.Error(w, `{"code":401,"type":"unauthorized","detail":"bad API key"}`, http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/api/v1/sandboxes/"+sandboxID+"/connect" { // serve's own route, for Sandbox handles
			io.WriteString(w, `{"id":"`+sandboxID+`","sandboxID":"`+sandboxID+`","state":"running"}`)
			return
		}
		r.Header.Del("Authorization")
		r.Header.Set(apiv1.AccessTokenHeader, agentToken)
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	return client.New(client.Options{URL: srv.URL, APIKey: agentKey}), dir
}

// testContext is a context that ends with the test, or after hangGuard.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// collector gathers output from callbacks and lets a test wait for text.
type collector struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newCollector() *collector { return &collector{changed: make(chan struct{}, 1)} }

func (c *collector) write(b []byte) {
	c.mu.Lock()
	c.buf.Write(b)
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *collector) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// waitFor waits until the output holds want, failing the test on a hang.
func (c *collector) waitFor(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	for !strings.Contains(c.String(), want) {
		select {
		case <-c.changed:
		case <-ctx.Done():
			t.Fatalf("no %q in the output: %q", want, c.String())
		}
	}
}

func TestRunStreamsAndExitCode(t *testing.T) {
	c, _ := newAgent(t)
	ctx := testContext(t)
	cmds := c.Commands(sandboxID)
	out, errOut := newCollector(), newCollector()
	res, err := cmds.Run(ctx, "echo out; echo err >&2; echo $GREETING; exit 3", &client.CommandOptions{
		Env: map[string]string{"GREETING": "hi"}, OnStdout: out.write, OnStderr: errOut.write,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || res.Stdout != "out\nhi\n" || res.Stderr != "err\n" || res.PID == 0 || res.Signal != "" {
		t.Errorf("result = %+v", res)
	}
	if out.String() != res.Stdout || errOut.String() != res.Stderr {
		t.Errorf("callbacks got %q and %q", out, errOut)
	}

	res, err = cmds.RunArgs(ctx, []string{"printf", "[%s]", "a b", "$HOME"}, &client.CommandOptions{DiscardOutput: true, OnStdout: out.write})
	if err != nil || res.ExitCode != 0 || res.Stdout != "" || !strings.HasSuffix(out.String(), "[a b][$HOME]") {
		t.Errorf("RunArgs = %+v, %v; callback got %q", res, err, out)
	}
}

// A command's stream is read to its very end, so that the next call goes
// over the same connection: a new one costs a round trip more. The end of
// the response comes a little after the end event here, as it may through
// serve's proxy.
func TestCommandsReuseTheConnection(t *testing.T) {
	proxied, _ := newAgent(t)
	ctx := testContext(t)
	target, _ := url.Parse(proxied.URL())
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }, FlushInterval: -1}
	late := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rp.ServeHTTP(w, r)
		time.Sleep(20 * time.Millisecond)
	}))
	defer late.Close()
	var dials atomic.Int32
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	c := client.New(client.Options{URL: late.URL, APIKey: agentKey, HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dial}}})
	cmds := c.Commands(sandboxID)
	for range 3 {
		if res, err := cmds.RunArgs(ctx, []string{"echo", "hi"}, nil); err != nil || res.Stdout != "hi\n" {
			t.Fatalf("RunArgs = %+v, %v", res, err)
		}
	}
	h, err := cmds.StartArgs(ctx, []string{"true"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cmds.RunArgs(ctx, []string{"true"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := dials.Load(); n > 2 { // Start's stream may overlap its POST's connection
		t.Errorf("%d connections for 5 commands", n)
	}
}

func TestStartWaitAndStdin(t *testing.T) {
	c, dir := newAgent(t)
	ctx := testContext(t)
	cmds := c.Commands(sandboxID)
	h, err := cmds.Start(ctx, "pwd; cat; echo done", &client.CommandOptions{Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	if h.PID() == 0 {
		t.Error("no PID")
	}
	for _, part := range []string{"hello ", "world\n"} {
		if err := h.SendStdin(ctx, []byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.CloseStdin(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != dir+"\nhello world\ndone\n" || res.ExitCode != 0 || res.PID != h.PID() {
		t.Errorf("result = %+v", res)
	}
}

func TestConnectByTagAfterDisconnect(t *testing.T) {
	c, _ := newAgent(t)
	ctx := testContext(t)
	cmds := c.Commands(sandboxID)
	first := newCollector()
	h, err := cmds.Start(ctx, "echo first; read x; echo second $x", &client.CommandOptions{Tag: "tagged", Stdin: true, OnStdout: first.write})
	if err != nil {
		t.Fatal(err)
	}
	first.waitFor(t, ctx, "first\n")
	h.Disconnect()
	if _, err := h.Wait(ctx); !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("Wait after Disconnect = %v", err)
	}

	again, err := cmds.Connect(ctx, "tagged", nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.PID() != h.PID() || again.Tag() != "tagged" {
		t.Errorf("connected to %d %q, started %d", again.PID(), again.Tag(), h.PID())
	}
	if err := cmds.SendStdin(ctx, "tagged", []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	res, err := again.Wait(ctx)
	if err != nil || res.Stdout != "first\nsecond x\n" {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
}

func TestListSignalKill(t *testing.T) {
	c, _ := newAgent(t)
	ctx := testContext(t)
	cmds := c.Commands(sandboxID)
	sleeper, err := cmds.Start(ctx, "sleep 1000", &client.CommandOptions{Tag: "sleeper"})
	if err != nil {
		t.Fatal(err)
	}
	trapper, err := cmds.Start(ctx, "trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done", nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cmds.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := slices.IndexFunc(list, func(ci apiv1.CommandInfo) bool {
		return ci.PID == sleeper.PID() && ci.Tag == "sleeper" && ci.Running && ci.Cmd == "sleep 1000"
	})
	if found < 0 || len(list) < 2 {
		t.Errorf("List = %+v", list)
	}

	if err := sleeper.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := sleeper.Wait(ctx)
	if err != nil || res.ExitCode != -1 || res.Signal != "KILL" {
		t.Errorf("killed: %+v, %v", res, err)
	}
	info, err := cmds.Get(ctx, "sleeper")
	if err != nil || info.Running || info.Signal != "KILL" {
		t.Errorf("Get after kill = %+v, %v", info, err)
	}

	// TERM as soon as the trap is set: the command says so on stdout.
	ready := newCollector()
	follow, err := cmds.Connect(ctx, strconv.Itoa(trapper.PID()), &client.CommandOptions{OnStdout: ready.write})
	if err != nil {
		t.Fatal(err)
	}
	ready.waitFor(t, ctx, "ready")
	if err := trapper.Signal(ctx, "TERM"); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*client.CommandHandle{trapper, follow} {
		if res, err := h.Wait(ctx); err != nil || res.ExitCode != 7 {
			t.Errorf("after TERM: %+v, %v", res, err)
		}
	}
}

func TestFilesBigRoundTrip(t *testing.T) {
	c, _ := newAgent(t)
	ctx := testContext(t)
	files := c.Files(sandboxID)
	const size = 32 << 20
	sent := sha256.New()
	src := io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{1}), size), sent)
	entry, err := files.Write(ctx, "big/blob.bin", src)
	if err != nil {
		t.Fatal(err)
	}
	if entry.Size != size || entry.Type != "file" || entry.Name != "blob.bin" {
		t.Errorf("written = %+v", entry)
	}
	r, err := files.Read(ctx, "big/blob.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := sha256.New()
	if n, err := io.Copy(got, r); err != nil || n != size {
		t.Fatalf("read %d bytes: %v", n, err)
	}
	if !bytes.Equal(got.Sum(nil), sent.Sum(nil)) {
		t.Error("the bytes read back differ from those written")
	}
}

func TestFilesOperations(t *testing.T) {
	c, dir := newAgent(t)
	ctx := testContext(t)
	files := c.Files(sandboxID)

	written, err := files.WriteFiles(ctx, "up", []client.FileUpload{
		{Name: "a.txt", Data: strings.NewReader("alpha")},
		{Name: "b.txt", Data: strings.NewReader("beta!")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 2 || written[0].Path != filepath.Join(dir, "up", "a.txt") || written[1].Size != 5 {
		t.Errorf("WriteFiles = %+v", written)
	}
	if data, err := files.ReadBytes(ctx, filepath.Join(dir, "up", "b.txt")); err != nil || string(data) != "beta!" {
		t.Errorf("ReadBytes = %q, %v", data, err)
	}

	if e, err := files.MakeDir(ctx, "up/sub/deeper"); err != nil || e.Type != "dir" {
		t.Fatalf("MakeDir = %+v, %v", e, err)
	}
	list, err := files.List(ctx, "up", 2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, strings.TrimPrefix(e.Path, dir+"/"))
	}
	if want := []string{"up/a.txt", "up/b.txt", "up/sub", "up/sub/deeper"}; !slices.Equal(names, want) {
		t.Errorf("List = %q, want %q", names, want)
	}

	moved, err := files.Rename(ctx, "up/a.txt", "up/sub/c.txt")
	if err != nil || moved.Path != filepath.Join(dir, "up/sub/c.txt") || moved.Size != 5 {
		t.Fatalf("Rename = %+v, %v", moved, err)
	}
	if st, err := files.Stat(ctx, "up/sub/c.txt"); err != nil || st.Type != "file" || st.Mode == "" || st.ModTime.IsZero() {
		t.Errorf("Stat = %+v, %v", st, err)
	}
	if err := files.Remove(ctx, "up/sub"); err != nil {
		t.Fatal(err)
	}

	missing := filepath.Join(dir, "up/sub/c.txt")
	_, statErr := files.Stat(ctx, missing)
	_, readErr := files.Read(ctx, missing)
	for _, err := range []error{statErr, readErr, files.Remove(ctx, missing)} {
		var apiErr *apiv1.Error
		if !errors.As(err, &apiErr) || apiErr.Code != http.StatusNotFound || !strings.Contains(apiErr.Detail, missing) {
			t.Errorf("for a missing path: %#v", err)
		}
	}
}

func TestWatch(t *testing.T) {
	c, dir := newAgent(t)
	ctx := testContext(t)
	files := c.Files(sandboxID)
	events := make(chan apiv1.FileEvent, 100)
	w, err := files.Watch(ctx, dir, false, func(e apiv1.FileEvent) { events <- e })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := files.Write(ctx, "seen.txt", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	for e := range events {
		if e.Path == filepath.Join(dir, "seen.txt") && (e.Type == "create" || e.Type == "write") && !e.At.IsZero() {
			break
		}
	}
	w.Stop()
	if err := w.Wait(); err != nil {
		t.Errorf("Wait after Stop = %v", err)
	}

	_, err = files.Watch(ctx, "nowhere", false, func(apiv1.FileEvent) {})
	var apiErr *apiv1.Error
	if !errors.As(err, &apiErr) || apiErr.Code != http.StatusNotFound {
		t.Errorf("watching a missing path: %v", err)
	}
}

func TestPty(t *testing.T) {
	c, _ := newAgent(t)
	ctx := testContext(t)
	pty := c.Pty(sandboxID)
	screen := newCollector()
	h, err := pty.Create(ctx, client.PtyOptions{Cols: 80, Rows: 24, Tag: "term", Cmd: "/bin/sh", OnData: screen.write})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Write(ctx, []byte("echo $((6*7))\n")); err != nil {
		t.Fatal(err)
	}
	screen.waitFor(t, ctx, "42")
	h.Disconnect()
	if _, err := h.Wait(ctx); !errors.Is(err, client.ErrDisconnected) {
		t.Fatalf("Wait after Disconnect = %v", err)
	}

	replay := newCollector()
	h, err = pty.Connect(ctx, "term", replay.write)
	if err != nil {
		t.Fatal(err)
	}
	replay.waitFor(t, ctx, "42") // what the terminal buffered
	if err := h.Resize(ctx, 100, 30); err != nil {
		t.Fatal(err)
	}
	h.Write(ctx, []byte("stty size\n"))
	replay.waitFor(t, ctx, "30 100")
	if err := pty.Resize(ctx, "term", 120, 40); err != nil {
		t.Fatal(err)
	}
	h.Write(ctx, []byte("stty size\n"))
	replay.waitFor(t, ctx, "40 120")
	h.Write(ctx, []byte("exit 3\n"))
	res, err := h.Wait(ctx)
	if err != nil || res.ExitCode != 3 || res.PID != h.PID() {
		t.Fatalf("Wait = %+v, %v", res, err)
	}
}

func TestSandboxHandleAndAuth(t *testing.T) {
	c, _ := newAgent(t)
	ctx := testContext(t)
	sb, err := c.Connect(ctx, sandboxID, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Commands.Run(ctx, "echo via the handle", nil)
	if err != nil || res.Stdout != "via the handle\n" {
		t.Errorf("Run = %+v, %v", res, err)
	}
	if _, err := sb.Files.Write(ctx, "h.txt", strings.NewReader("h")); err != nil {
		t.Error(err)
	}
	if sb.Pty == nil {
		t.Error("no Pty")
	}

	bad := client.New(client.Options{URL: c.URL(), APIKey: "wrong"})
	_, err = bad.Commands(sandboxID).List(ctx)
	var apiErr *apiv1.Error
	if !errors.As(err, &apiErr) || apiErr.Code != http.StatusUnauthorized {
		t.Errorf("with a wrong key: %v", err)
	}
}

// An upload of known size goes with its length; one of unknown size in
// large chunks. Either way the file arrives whole.
func TestWriteSendsLengthWhenKnown(t *testing.T) {
	var lengths []int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lengths = append(lengths, r.ContentLength)
		n, _ := io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"name":"f","path":"/f","type":"file","size":`+strconv.FormatInt(n, 10)+`}`)
	}))
	defer srv.Close()
	files := client.New(client.Options{URL: srv.URL}).Files(sandboxID)
	ctx := testContext(t)
	f, err := os.CreateTemp(t.TempDir(), "upload")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("0123456789")
	f.Seek(4, io.SeekStart)
	for _, r := range []io.Reader{bytes.NewReader([]byte("hello")), strings.NewReader(""), f, io.MultiReader(strings.NewReader("abc"))} {
		if _, err := files.Write(ctx, "/f", r); err != nil {
			t.Fatal(err)
		}
	}
	if want := []int64{5, 0, 6, -1}; !slices.Equal(lengths, want) {
		t.Errorf("Content-Length sent: %v, want %v", lengths, want)
	}
}
