package agentcall_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/agentcall"
	"github.com/sbxdev/sbx/internal/testenv"
)

// sessionAgent serves a real agent in-process working in a temporary
// directory, and answers how serve reaches it.
func sessionAgent(t *testing.T) (agentcall.Agent, string) {
	t.Helper()
	dir := t.TempDir()
	a, err := agent.New(agent.Config{Token: token, Workdir: dir, Env: testenv.AgentEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(func() { a.Close() })
	sb := sbx.Sandbox{ID: "7c5e1d2a-0000-4000-8000-0000000000aa", AccessToken: token}
	return agentcall.For(sb, strings.TrimPrefix(srv.URL, "http://")), dir
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
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

// A command's stdin, stdout and stderr stay apart, its exit code comes
// back, and a signal reaches it.
func TestRunPipesAndExits(t *testing.T) {
	a, _ := sessionAgent(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out, errOut syncBuffer
	pid := 0
	end, err := a.Run(ctx, apiv1.StartCommandRequest{Cmd: "tr a-z A-Z; echo oops >&2; exit 3"},
		agentcall.Streams{Stdin: strings.NewReader("hello\nworld\n"), Stdout: &out, Stderr: &errOut, Started: func(p int) { pid = p }})
	if err != nil || end.ExitCode == nil || *end.ExitCode != 3 || out.String() != "HELLO\nWORLD\n" || errOut.String() != "oops\n" || pid == 0 {
		t.Fatalf("run: %+v %v; stdout %q stderr %q pid %d", end, err, out.String(), errOut.String(), pid)
	}

	// A command that ends while its stdin is still open ends Run all the
	// same: the stdin request ends with it.
	open, keep := io.Pipe()
	defer keep.Close()
	if end, err := a.Run(ctx, apiv1.StartCommandRequest{Cmd: "exit 4"}, agentcall.Streams{Stdin: open}); err != nil || end.ExitCode == nil || *end.ExitCode != 4 {
		t.Fatalf("with stdin open: %+v %v", end, err)
	}

	// Without stdin, stdin is empty; a signal ends a command.
	started := make(chan int, 1)
	done := make(chan apiv1.CommandEvent, 1)
	go func() {
		end, err := a.Run(ctx, apiv1.StartCommandRequest{Cmd: "cat; sleep 60"}, agentcall.Streams{Started: func(p int) { started <- p }})
		if err != nil {
			t.Error(err)
		}
		done <- end
	}()
	if err := a.Signal(ctx, <-started, "TERM"); err != nil {
		t.Fatal(err)
	}
	if end := <-done; end.Signal != "TERM" {
		t.Errorf("signalled: %+v", end)
	}
}

// A terminal: its output, a resize that takes effect, its exit code.
func TestPtyResizesAndExits(t *testing.T) {
	a, _ := sessionAgent(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	p, err := a.StartPty(ctx, apiv1.StartPtyRequest{Cols: 80, Rows: 24, Cmd: "read x; stty size; exit 5"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Resize(ctx, 101, 33); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the resize is a message; the line below another
	if err := p.Write(ctx, []byte("go\n")); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	exit, err := p.Follow(ctx, &out)
	if err != nil || exit.ExitCode == nil || *exit.ExitCode != 5 || !strings.Contains(out.String(), "33 101") {
		t.Fatalf("pty: %+v %v; output %q", exit, err, out.String())
	}
}

// The agent's own SFTP server, run as a command: a file goes up and comes
// back whole, as the command's user, relative to its working directory.
func TestSFTPServerCommand(t *testing.T) {
	a, dir := sessionAgent(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ended := make(chan apiv1.CommandEvent, 1)
	go func() {
		end, err := a.Run(ctx, apiv1.StartCommandRequest{Args: []string{apiv1.SFTPServer}}, agentcall.Streams{Stdin: inR, Stdout: outW, Stderr: os.Stderr})
		if err != nil {
			t.Error(err)
		}
		outW.Close()
		ended <- end
	}()
	c, err := sftp.NewClientPipe(outR, inW)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	f, err := c.Create("up.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, err := os.ReadFile(filepath.Join(dir, "up.bin")); err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("written through sftp: %d bytes, %v", len(got), err)
	}
	g, err := c.Open(filepath.Join(dir, "up.bin"))
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(g)
	if err != nil || !bytes.Equal(back, data) {
		t.Fatalf("read back: %d bytes, %v", len(back), err)
	}
	if wd, err := c.Getwd(); err != nil || wd != dir {
		t.Errorf("working directory %q %v, want %q", wd, err, dir)
	}
	c.Close()
	inW.Close()
	if end := <-ended; end.ExitCode == nil || *end.ExitCode != 0 {
		t.Errorf("the server ended: %+v", end)
	}
}
