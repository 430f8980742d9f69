package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// The agent in a real gVisor sandbox, through serve's proxy with the Go
// client: commands (exit code, both streams, stdin, kill reaching
// grandchildren, reconnect by tag, signals), files (a 1 GiB round trip with
// checksums while serve and the agent stay small, uploads, listing, watch,
// errors), a PTY driven like a user, the runtime URL and its token, and
// commands and PTYs surviving pause/resume and hibernate/wake.
func TestAgentThroughServe(t *testing.T) {
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	sb, err := c.Create(ctx, "base", &client.CreateOptions{WaitReady: true, Timeout: time.Hour, MemoryMB: 1024})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("commands", func(t *testing.T) { agentCommands(t, ctx, sb) })
	t.Run("files", func(t *testing.T) { agentFiles(t, ctx, s, sb) })
	t.Run("pty", func(t *testing.T) { agentPty(t, ctx, sb) })
	t.Run("runtime URL", func(t *testing.T) { agentRuntimeURL(t, ctx, s, c, sb) })
	t.Run("pause and hibernate", func(t *testing.T) { agentSurvives(t, ctx, sb) })
}

func agentCommands(t *testing.T, ctx context.Context, sb *client.Sandbox) {
	var streamed bytes.Buffer
	res, err := sb.Commands.Run(ctx, "echo out; echo err >&2; cat /proc/version; exit 3", &client.CommandOptions{
		OnStdout: func(b []byte) { streamed.Write(b) }})
	if err != nil || res.ExitCode != 3 || !strings.HasPrefix(res.Stdout, "out\n") || !strings.Contains(res.Stdout, "gvisor") ||
		res.Stderr != "err\n" || streamed.String() != res.Stdout {
		t.Fatalf("run: %+v %v (streamed %q)", res, err, streamed.String())
	}

	cat, err := sb.Commands.Start(ctx, "cat", &client.CommandOptions{Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.SendStdin(ctx, []byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if err := cat.CloseStdin(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := cat.Wait(ctx); err != nil || r.Stdout != "ping\n" || r.ExitCode != 0 {
		t.Fatalf("stdin round trip: %+v %v", r, err)
	}

	tree, err := sb.Commands.Start(ctx, "sleep 1000 & echo $! > /tmp/grandchild; wait", &client.CommandOptions{Tag: "tree"})
	if err != nil {
		t.Fatal(err)
	}
	grandchild := waitForFile(t, ctx, sb, "/tmp/grandchild")
	if info, err := sb.Commands.Get(ctx, "tree"); err != nil || !info.Running || info.PID != tree.PID() {
		t.Fatalf("get by tag: %+v %v", info, err)
	}
	if err := sb.Commands.Kill(ctx, "tree"); err != nil {
		t.Fatal(err)
	}
	if r, _ := sb.Commands.Run(ctx, "kill -0 "+grandchild, nil); r == nil || r.ExitCode == 0 {
		t.Errorf("the grandchild %s outlived the kill: %+v", grandchild, r)
	}

	trap, err := sb.Commands.Start(ctx, "trap 'exit 7' TERM; while :; do sleep 0.1; done", nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // lets bash set its trap; not a measurement
	if err := trap.Signal(ctx, "TERM"); err != nil {
		t.Fatal(err)
	}
	if r, err := trap.Wait(ctx); err != nil || r.ExitCode != 7 {
		t.Errorf("TERM: %+v %v", r, err)
	}

	// A reader that drops and comes back by tag gets the output from the start.
	ticker, err := sb.Commands.Start(ctx, "for i in $(seq 1 5); do echo tick $i; sleep 0.2; done", &client.CommandOptions{Tag: "ticker"})
	if err != nil {
		t.Fatal(err)
	}
	ticker.Disconnect()
	again, err := sb.Commands.Connect(ctx, "ticker", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := again.Wait(ctx); err != nil || !strings.HasPrefix(r.Stdout, "tick 1\n") || !strings.HasSuffix(r.Stdout, "tick 5\n") {
		t.Errorf("reconnect by tag: %+v %v", r, err)
	}
	list, err := sb.Commands.List(ctx)
	if err != nil || len(list) < 4 {
		t.Errorf("list: %d commands, %v", len(list), err)
	}
}

// waitForFile returns a file's contents once it has some.
func waitForFile(t *testing.T, ctx context.Context, sb *client.Sandbox, path string) string {
	t.Helper()
	for ctx.Err() == nil {
		if b, err := sb.Files.ReadBytes(ctx, path); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", path)
	return ""
}

func agentFiles(t *testing.T, ctx context.Context, s *server, sb *client.Sandbox) {
	const size = 1 << 30
	// gVisor's /proc has no VmHWM: sample the agent's (PID 1's) RSS while the file goes through.
	if _, err := sb.Commands.Start(ctx, "while :; do awk '/VmRSS/ {print $2}' /proc/1/status >> /tmp/rss; sleep 0.1; done", &client.CommandOptions{Tag: "rss"}); err != nil {
		t.Fatal(err)
	}
	up := sha256.New()
	if _, err := sb.Files.Write(ctx, "/workspace/big", io.TeeReader(io.LimitReader(pattern{}, size), up)); err != nil {
		t.Fatal(err)
	}
	r, err := sb.Files.Read(ctx, "/workspace/big")
	if err != nil {
		t.Fatal(err)
	}
	down := sha256.New()
	n, err := io.Copy(down, r)
	r.Close()
	if err != nil || n != size || !bytes.Equal(up.Sum(nil), down.Sum(nil)) {
		t.Fatalf("1 GiB round trip: %d bytes, %v, checksums equal %v", n, err, bytes.Equal(up.Sum(nil), down.Sum(nil)))
	}
	if rss := peakRSS(t, fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid)); rss > 100<<20 {
		t.Errorf("serve's peak RSS %d MB during the 1 GiB round trip", rss>>20)
	}
	if err := sb.Commands.Kill(ctx, "rss"); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Commands.Run(ctx, "sort -n /tmp/rss | tail -1; wc -l < /tmp/rss; rm /workspace/big", nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(res.Stdout); len(f) != 2 || f[1] == "0" || atoi(f[0]) > 100<<10 {
		t.Errorf("the agent's peak RSS in kB, and samples: %q", res.Stdout)
	} else {
		t.Logf("peak RSS during the 1 GiB round trip: agent %d MB (%s samples), serve %d MB", atoi(f[0])>>10, f[1], peakRSS(t, fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))>>20)
	}

	var mu sync.Mutex
	var events []string
	w, err := sb.Files.Watch(ctx, "/workspace", true, func(e apiv1.FileEvent) {
		mu.Lock()
		events = append(events, e.Type+" "+e.Path)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Files.MakeDir(ctx, "/workspace/d/e"); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Files.WriteFiles(ctx, "/workspace/d", []client.FileUpload{{Name: "a.txt", Data: strings.NewReader("A")},
		{Name: "e/b.txt", Data: strings.NewReader("B")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sb.Files.Rename(ctx, "/workspace/d/a.txt", "/workspace/d/c.txt"); err != nil {
		t.Fatal(err)
	}
	entries, err := sb.Files.List(ctx, "/workspace/d", 2)
	var paths []string
	for _, e := range entries {
		paths = append(paths, e.Path)
	}
	if err != nil || strings.Join(paths, " ") != "/workspace/d/c.txt /workspace/d/e /workspace/d/e/b.txt" {
		t.Errorf("list: %v %v", paths, err)
	}
	if st, err := sb.Files.Stat(ctx, "/workspace/d/c.txt"); err != nil || st.Size != 1 || st.Type != "file" {
		t.Errorf("stat: %+v %v", st, err)
	}
	if err := sb.Files.Remove(ctx, "/workspace/d"); err != nil {
		t.Fatal(err)
	}
	var apiErr *apiv1.Error
	if _, err := sb.Files.Stat(ctx, "/workspace/d"); !errors.As(err, &apiErr) || apiErr.Code != 404 || !strings.Contains(apiErr.Detail, "/workspace/d") {
		t.Errorf("a removed path: %v", err)
	}
	if _, err := sb.Files.ReadBytes(ctx, "/etc"); !errors.As(err, &apiErr) || apiErr.Code != 400 || !strings.Contains(apiErr.Detail, "directory") {
		t.Errorf("reading a directory: %v", err)
	}
	for ctx.Err() == nil {
		mu.Lock()
		seen := strings.Join(events, "\n")
		mu.Unlock()
		if strings.Contains(seen, "create /workspace/d/e/b.txt") && strings.Contains(seen, "rename /workspace/d/a.txt") &&
			strings.Contains(seen, "remove /workspace/d") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.Stop()
}

// pattern is an endless stream of bytes that are not all alike.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i * 7)
	}
	return len(p), nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// peakRSS reads VmHWM from a /proc status file, in bytes.
func peakRSS(t *testing.T, status string) int {
	data, err := os.ReadFile(status)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in %s", status)
	return 0
}

// screen collects a terminal's output.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) write(b []byte) { s.mu.Lock(); s.buf.Write(b); s.mu.Unlock() }

// waitFor waits until the screen shows text.
func (s *screen) waitFor(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	for ctx.Err() == nil {
		s.mu.Lock()
		ok := strings.Contains(s.buf.String(), text)
		s.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the terminal never showed %q:\n%s", text, s.buf.String())
}

func agentPty(t *testing.T, ctx context.Context, sb *client.Sandbox) {
	var scr screen
	term, err := sb.Pty.Create(ctx, client.PtyOptions{Cols: 80, Rows: 24, Tag: "term", OnData: scr.write})
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Write(ctx, []byte("echo $((6*7))\n")); err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, ctx, "42")
	if err := sb.Pty.Resize(ctx, "term", 120, 40); err != nil {
		t.Fatal(err)
	}
	term.Disconnect()
	var again screen
	back, err := sb.Pty.Connect(ctx, "term", again.write)
	if err != nil {
		t.Fatal(err)
	}
	again.waitFor(t, ctx, "42") // what the terminal showed before
	if err := back.Write(ctx, []byte("stty size; exit 3\n")); err != nil {
		t.Fatal(err)
	}
	again.waitFor(t, ctx, "40 120")
	if r, err := back.Wait(ctx); err != nil || r.ExitCode != 3 {
		t.Errorf("the terminal's exit: %+v %v", r, err)
	}
}

// The runtime URL reaches the agent with the access token alone; a wrong
// token is a 401, and a rotated one replaces the old at once.
func agentRuntimeURL(t *testing.T, ctx context.Context, s *server, c *client.Client, sb *client.Sandbox) {
	info := sb.Data()
	call := func(token string) int {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.url+"/commands", nil)
		req.Host = strings.TrimPrefix(info.RuntimeURL, "http://")
		req.Header.Set(apiv1.AccessTokenHeader, token)
		resp, err := http.DefaultClient.Do(req) // the agent's own API, which the OpenAPI document does not describe
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := call(info.AccessToken); got != http.StatusOK {
		t.Fatalf("the runtime URL %s with the token: %d", info.RuntimeURL, got)
	}
	if got := call("wrong"); got != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d", got)
	}
	rotated, err := c.Connect(ctx, info.ID, &client.ConnectOptions{RotateAccessToken: true})
	if err != nil {
		t.Fatal(err)
	}
	if rotated.Data().AccessToken == info.AccessToken || call(info.AccessToken) != http.StatusUnauthorized ||
		call(rotated.Data().AccessToken) != http.StatusOK {
		t.Error("the rotated token did not replace the old one")
	}
}

// A command and a terminal started before a pause, and before a hibernate,
// run on after the resume and the wake, and their streams reconnect.
func agentSurvives(t *testing.T, ctx context.Context, sb *client.Sandbox) {
	if _, err := sb.Commands.Start(ctx, "i=0; while :; do i=$((i+1)); echo tick $i; echo $i > /tmp/count; sleep 0.1; done", &client.CommandOptions{Tag: "counter"}); err != nil {
		t.Fatal(err)
	}
	var scr screen
	term, err := sb.Pty.Create(ctx, client.PtyOptions{Tag: "survivor", OnData: scr.write})
	if err != nil {
		t.Fatal(err)
	}
	term.Disconnect()
	for _, hibernate := range []bool{false, true} {
		pause := sb.Pause
		if hibernate {
			pause = sb.Hibernate
		}
		if err := pause(ctx); err != nil {
			t.Fatal(err)
		}
		// The next call to the agent resumes (or wakes) the sandbox.
		info, err := sb.Commands.Get(ctx, "counter")
		if err != nil || !info.Running {
			t.Fatalf("the counter after hibernate=%v: %+v %v", hibernate, info, err)
		}
		count := func() int {
			n, _ := strconv.Atoi(waitForFile(t, ctx, sb, "/tmp/count"))
			return n
		}
		before := count()
		time.Sleep(500 * time.Millisecond) // lets the counter count; not a measurement
		now := count()
		if now <= before {
			t.Fatalf("the counter stopped after hibernate=%v: %d, then %d", hibernate, before, now)
		}
		var out screen
		h, err := sb.Commands.Connect(ctx, "counter", &client.CommandOptions{OnStdout: out.write})
		if err != nil {
			t.Fatal(err)
		}
		out.waitFor(t, ctx, fmt.Sprintf("tick %d\n", now+3))
		h.Disconnect()
		var again screen
		p, err := sb.Pty.Connect(ctx, "survivor", again.write)
		if err != nil {
			t.Fatal(err)
		}
		marker := fmt.Sprintf("alive-%v", hibernate)
		if err := p.Write(ctx, []byte("echo "+strings.ToUpper(marker)+" | tr A-Z a-z\n")); err != nil {
			t.Fatal(err)
		}
		again.waitFor(t, ctx, marker)
		p.Disconnect()
	}
	if err := sb.Commands.Kill(ctx, "counter"); err != nil {
		t.Fatal(err)
	}
}
