package cli_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx/cli"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/agenttest"
)

// signalled is an output that says when it first holds want.
type signalled struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
}

func (s *signalled) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if s.seen != nil && strings.Contains(s.buf.String(), s.want) {
		close(s.seen)
		s.seen = nil
	}
	return len(p), nil
}

func (s *signalled) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// sbx exec through a real serve (agenttest) whose sandbox is deleted while
// the command runs: exec ends at once, saying why, and exits non-zero. It
// once waited for the dead sandbox's connection to time out, then said
// "unexpected EOF".
func TestExecEndsWhenTheSandboxStops(t *testing.T) {
	s := agenttest.Serve(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.URL, APIKey: s.Key})
	sb, err := c.Create(ctx, "base", &client.CreateOptions{WaitReady: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SBX_URL", s.URL)
	t.Setenv("SBX_API_KEY", s.Key)
	out := &signalled{want: "started", seen: make(chan struct{})}
	started := out.seen
	var errOut bytes.Buffer
	exited := make(chan int, 1)
	go func() {
		exited <- cli.Run([]string{"exec", sb.SandboxID(), "--", "sh", "-c", "echo started; sleep 600"},
			cli.Options{Stdin: strings.NewReader(""), Stdout: out, Stderr: &errOut})
	}()
	select {
	case <-started:
	case code := <-exited:
		t.Fatalf("exec exited %d before the sandbox stopped: %q", code, errOut.String())
	case <-ctx.Done():
		t.Fatalf("exec did not start: %q", out.String())
	}
	if err := sb.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if want := "sbx: sandbox " + sb.SandboxID() + " was deleted\n"; code == 0 || errOut.String() != want {
			t.Errorf("exec exited %d, stderr %q; want non-zero and %q", code, errOut.String(), want)
		}
	case <-ctx.Done():
		t.Fatalf("exec went on after the sandbox was deleted: stdout %q", out.String())
	}
}
