package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// follower is a running `sbx sandbox logs --follow`, its stdout read line by line.
type follower struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines chan string
	read  []string
}

func (s *server) follow(args ...string) *follower {
	s.t.Helper()
	cmd := exec.Command(sbxBin, append([]string{"sandbox", "logs", "--follow"}, args...)...)
	cmd.Env = append(os.Environ(), "SBX_URL="+s.url, "SBX_DATA_DIR="+s.dataDir, "SBX_API_KEY=")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	f := &follower{t: s.t, cmd: cmd, lines: make(chan string)}
	s.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
		close(f.lines)
	}()
	return f
}

// until reads lines until one contains all of want.
func (f *follower) until(want ...string) string {
	f.t.Helper()
	for l := range f.lines {
		f.read = append(f.read, l)
		if containsAll(l, want...) {
			return l
		}
	}
	f.t.Fatalf("sbx sandbox logs --follow ended before a line with %q; it printed:\n%s", want, strings.Join(f.read, "\n"))
	return ""
}

// end reads what is left and waits for the command, which must exit 0.
func (f *follower) end() []string {
	f.t.Helper()
	var rest []string
	for l := range f.lines {
		rest = append(rest, l)
	}
	if err := f.cmd.Wait(); err != nil {
		f.t.Errorf("sbx sandbox logs --follow: %v", err)
	}
	return rest
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// The observability verbs of the command line against a real serve (the
// Memory provider, whose own log gains a line at each pause): `sandbox logs
// --follow` prints the log, then lines added after it started, and exits 0
// when the sandbox is deleted (--json: a LogLine a line); `sandbox
// metrics`, `version` and `summary`, each as a table and with --json.
func TestCLIObservability(t *testing.T) {
	s := startServer(t, serverOpts{})
	var sb apiv1.Sandbox
	if err := json.Unmarshal([]byte(s.ok("sandbox", "create", "base", "--wait", "--json")), &sb); err != nil {
		t.Fatal(err)
	}
	id := sb.SandboxID

	human, asJSON := s.follow(id), s.follow("--json", id)
	human.until(" stdout booted template base")
	asJSON.until(`"source":"stdout"`, `"line":"booted template base"`)
	s.ok("sandbox", "pause", id)
	human.until(" stdout paused")
	asJSON.until(`"source":"stdout"`, `"line":"paused"`)
	s.ok("sandbox", "delete", "--yes", id)
	human.until(" sbx killed")
	last := asJSON.until(`"source":"sbx"`, `"line":"killed`)
	var l apiv1.LogLine
	if err := json.Unmarshal([]byte(last), &l); err != nil || l.At.IsZero() {
		t.Errorf("--follow --json printed %q (%v)", last, err)
	}
	if rest := human.end(); len(rest) > 0 {
		t.Errorf("lines after the kill: %q", rest)
	}
	asJSON.end()
	if _, errOut, code := s.cli("sandbox", "logs", "--follow", "--limit", "5", id); code != 2 || !strings.Contains(errOut, "--follow") {
		t.Errorf("--follow --limit: exit %d, %s", code, errOut)
	}

	// Through the Go client: a killed sandbox's stream is its whole log, ended.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	var followed []apiv1.LogLine
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	if err := c.FollowLogs(ctx, id, func(l apiv1.LogLine) error { followed = append(followed, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if n := len(followed); n == 0 || followed[n-1].Source != "sbx" || !strings.HasPrefix(followed[n-1].Line, "killed") {
		t.Errorf("the followed log of a killed sandbox: %+v", followed)
	}
	// Stopping a follow early is no error.
	stop := func(apiv1.LogLine) error { return io.EOF }
	if err := c.FollowLogs(ctx, id, stop); err != nil {
		t.Errorf("stopping a follow: %v", err)
	}

	// Metrics of a running sandbox.
	var running apiv1.Sandbox
	if err := json.Unmarshal([]byte(s.ok("sandbox", "create", "base", "--wait", "--json")), &running); err != nil {
		t.Fatal(err)
	}
	if out := s.ok("sandbox", "metrics", running.SandboxID); !containsAll(out, "CPU time:", "Memory:", "1.0 MiB", "Processes:", "Disk used:") {
		t.Errorf("sandbox metrics:\n%s", out)
	}
	var m apiv1.Metrics
	if err := json.Unmarshal([]byte(s.ok("sandbox", "metrics", "--json", running.SandboxID)), &m); err != nil || m.Processes != 1 || m.MemoryBytes != 1<<20 {
		t.Errorf("sandbox metrics --json: %+v (%v)", m, err)
	}
	if _, errOut, code := s.cli("sandbox", "metrics", id); code != 1 || !strings.Contains(errOut, "killed") {
		t.Errorf("metrics of a killed sandbox: exit %d, %s", code, errOut)
	}

	// The version of this sbx and of the server.
	if out := s.ok("version"); !containsAll(out, "client: ", "server: ", s.url) || strings.Contains(out, "unknown") {
		t.Errorf("version:\n%s", out)
	}
	var v struct {
		Client      apiv1.Version  `json:"client"`
		Server      *apiv1.Version `json:"server"`
		ServerError string         `json:"server_error"`
	}
	if err := json.Unmarshal([]byte(s.ok("version", "--json")), &v); err != nil || v.Client.Version == "" || v.Client.Go == "" || v.Server == nil || v.Server.Version == "" || v.ServerError != "" {
		t.Errorf("version --json: %+v (%v)", v, err)
	}
	var me apiv1.Me
	s.call("GET", "/api/v1/me", nil, 200, &me)
	if me.Server.Version == "" || me.Server.Go == "" {
		t.Errorf("/api/v1/me names no server version: %+v", me.Server)
	}
	// With no server to answer, the client's version, and why not the server's.
	if out, errOut, code := s.cli("version", "--url", "http://"+freeAddr(t)); code != 0 || !containsAll(out, "client: ", "server: unknown: cannot reach") {
		t.Errorf("version without a server: exit %d\n%s%s", code, out, errOut)
	}

	// The observability summary.
	if out := s.ok("summary"); !containsAll(out, "Org:", "default", "Quotas:", "Providers:", "memory (default)") {
		t.Errorf("summary:\n%s", out)
	}
	var sum apiv1.Summary
	if err := json.Unmarshal([]byte(s.ok("summary", "--json")), &sum); err != nil || sum.Org.Name != "default" || len(sum.Quotas) == 0 {
		t.Errorf("summary --json: %+v (%v)", sum, err)
	}
}
