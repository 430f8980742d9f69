package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/e2b"
)

// installation starts a serve whose E2B API (/e2b) and OpenSandbox API
// (/opensandbox) stand for an E2B installation and an OpenSandbox server:
// the real servers that the unmodified E2B and OpenSandbox SDKs are checked
// against (TestE2BSDKLocal, TestOpenSandboxSDKLocal), running gVisor
// sandboxes whose agents serve envd and execd. It answers the serve and a
// file holding an API key of it.
func installation(t *testing.T) (*server, string) {
	t.Helper()
	b := localServer(t, false)
	keyFile := filepath.Join(t.TempDir(), "e2b.key")
	if err := os.WriteFile(keyFile, []byte(b.key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return b, keyFile
}

// e2bArgs are the serve flags of the e2b provider over installation b.
func e2bArgs(b *server, keyFile string) []string {
	return []string{"--e2b-api-url", b.url + "/e2b", "--e2b-sandbox-url", b.url, "--e2b-api-key-file", keyFile}
}

// openSandboxArgs are the serve flags of the opensandbox provider over
// installation b.
func openSandboxArgs(b *server, keyFile string) []string {
	return []string{"--opensandbox-url", b.url + "/opensandbox", "--opensandbox-api-key-file", keyFile}
}

// madeBy lists installation b's sandboxes that serve instance name made,
// by their metadata (e2b's and opensandbox's alike).
func madeBy(b *server, name string) []apiv1.Sandbox {
	return b.listAll("metadata=" + url.QueryEscape(e2b.MetaInstance+"="+name))
}

// The e2b provider end to end: serve A (--provider e2b) runs its sandboxes
// on serve B's E2B API. Commands, files, a terminal and pause/resume with
// a process kept go through A's API to envd in B's sandbox; B's logs and
// metrics reach A; what e2b cannot do is a 501 naming it; the CLI drives
// it as any; A SIGKILLed and restarted adopts the running sandbox and
// kills one of its instance that no row owns; deletes leave nothing on B.
func TestE2BProviderLocal(t *testing.T) {
	b, keyFile := installation(t)
	name := "e2eeb" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	a := startServer(t, serverOpts{bin: sbxBin, args: append([]string{"--provider", "e2b", "--name", name, "--hibernate-after", "0"}, e2bArgs(b, keyFile)...)})
	t.Cleanup(func() { // what a failed test leaves running
		for _, sb := range a.listAll("") {
			if sb.State == "running" || sb.State == "paused" {
				a.do("DELETE", "/api/v1/sandboxes/"+sb.ID, nil)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: a.url, APIKey: a.key, HTTPClient: a.http})
	sb, err := c.Create(ctx, "base", &client.CreateOptions{WaitReady: true, Timeout: time.Hour, EnvVars: map[string]string{"GREETING": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if sb.Data().Provider != "e2b" {
		t.Errorf("provider = %q", sb.Data().Provider)
	}
	onB := madeBy(b, name)
	if len(onB) != 1 || onB[0].SandboxID != sb.SandboxID() || onB[0].Metadata[e2b.MetaSandbox] != sb.ID() || onB[0].State != "running" {
		t.Fatalf("the installation's sandboxes: %+v", onB)
	}

	// Commands and files through envd.
	res, err := sb.Commands.Run(ctx, `echo out $GREETING; echo err >&2; id -un; exit 3`, nil)
	if err != nil || res.ExitCode != 3 || res.Stdout != "out hello\nuser\n" || res.Stderr != "err\n" {
		t.Fatalf("run: %+v %v", res, err)
	}
	if _, err := sb.Files.Write(ctx, "/workspace/hello.txt", strings.NewReader("kept\n")); err != nil {
		t.Fatal(err)
	}
	if data, err := sb.Files.ReadBytes(ctx, "/workspace/hello.txt"); err != nil || string(data) != "kept\n" {
		t.Fatalf("read back: %q %v", data, err)
	}
	if list, err := sb.Files.List(ctx, "/workspace", 1); err != nil || len(list) != 1 || list[0].Name != "hello.txt" || list[0].Size != 5 {
		t.Fatalf("list: %+v %v", list, err)
	}

	// Pause is E2B's, keeping a running process.
	sleeper, err := sb.Commands.Start(ctx, "sleep 100000", &client.CommandOptions{Tag: "sleeper"})
	if err != nil {
		t.Fatal(err)
	}
	sleeper.Disconnect()
	var p apiv1.Sandbox
	a.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/pause", map[string]any{}, http.StatusOK, &p)
	if on := b.get(sb.SandboxID()); p.State != "paused" || on.State != "paused" {
		t.Fatalf("paused: %s, on the installation %s", p.State, on.State)
	}
	a.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/resume", map[string]any{}, http.StatusOK, &p)
	if on := b.get(sb.SandboxID()); p.State != "running" || on.State != "running" {
		t.Fatalf("resumed: %s, on the installation %s", p.State, on.State)
	}
	alive := fmt.Sprintf("kill -0 %d && cat /workspace/hello.txt", sleeper.PID())
	if res, err := sb.Commands.Run(ctx, alive, nil); err != nil || res.ExitCode != 0 || res.Stdout != "kept\n" {
		t.Fatalf("after resume: %+v %v", res, err)
	}

	// What e2b cannot do is a 501 naming it.
	a.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/pause", map[string]any{"hibernate": true}, http.StatusNotImplemented, "provider e2b cannot hibernate")
	a.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/fork", map[string]any{"count": 1}, http.StatusNotImplemented, "provider e2b")
	a.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/code/execute", map[string]any{"code": "1+1"}, http.StatusNotImplemented, "provider e2b")

	// The installation's logs and metrics.
	var m apiv1.Metrics
	a.call("GET", "/api/v1/sandboxes/"+sb.ID()+"/metrics", nil, http.StatusOK, &m)
	if m.MemoryBytes <= 0 {
		t.Errorf("metrics: %+v", m)
	}
	var logs apiv1.LogPage
	a.call("GET", "/api/v1/sandboxes/"+sb.ID()+"/logs", nil, http.StatusOK, &logs)
	found := false
	for _, l := range logs.Items { // the installation's timeline of it
		found = found || (l.Source == "e2b" && strings.Contains(l.Line, "resumed"))
	}
	if !found {
		t.Errorf("the logs lack the installation's lines: %+v", logs.Items)
	}

	// The CLI, a terminal among its verbs.
	id := strings.SplitN(a.ok("sandbox", "create", "base", "--wait"), "\n", 2)[0]
	if out := a.ok("exec", id, "--", "sh", "-c", "echo cli > /workspace/cli.txt; echo done"); out != "done\n" {
		t.Errorf("sbx exec: %q", out)
	}
	local := filepath.Join(t.TempDir(), "up.txt")
	os.WriteFile(local, []byte("uploaded\n"), 0o644)
	a.ok("files", "put", id, "/workspace/up.txt", local)
	if out := a.ok("files", "cat", id, "/workspace/up.txt"); out != "uploaded\n" {
		t.Errorf("files cat: %q", out)
	}
	a.ok("sandbox", "pause", id)
	if st := b.get(id).State; st != "paused" {
		t.Errorf("after sbx sandbox pause the installation's sandbox is %q", st)
	}
	a.ok("sandbox", "resume", id)
	if out := a.ok("exec", id, "--", "cat", "/workspace/cli.txt"); out != "cli\n" {
		t.Errorf("after resume: %q", out)
	}
	a.ok("sandbox", "delete", id, "--yes")
	if st := b.get(id).State; st != "killed" {
		t.Errorf("after sbx sandbox delete the installation's sandbox is %q", st)
	}

	// A sandbox of this instance that no row owns, as a crash between the
	// installation's create and the ledger's would leave.
	var orphan apiv1.Sandbox
	b.call("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "metadata": map[string]string{e2b.MetaInstance: name, e2b.MetaProvider: "e2b", e2b.MetaSandbox: uuid.NewString()}},
		http.StatusCreated, &orphan)

	// serve dies; the running sandbox stays and is adopted by the next serve.
	a.stop(syscall.SIGKILL)
	a.restart(serverOpts{bin: sbxBin, args: a.opts.args})
	if got := a.get(sb.ID()); got.State != "running" {
		t.Fatalf("after restart the sandbox is %s", got.State)
	}
	if st := b.get(orphan.SandboxID).State; st != "killed" {
		t.Errorf("reconcile left the orphan (%s)", st)
	}
	again, err := c.Connect(ctx, sb.ID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := again.Commands.Run(ctx, alive, nil); err != nil || res.ExitCode != 0 || res.Stdout != "kept\n" {
		t.Fatalf("the adopted sandbox: %+v %v", res, err)
	}
	// The installation down: a create on e2b is a 503 naming it, and
	// records nothing; back up, the sandbox is reached again.
	b.stop(syscall.SIGKILL)
	before := len(a.listAll(""))
	time.Sleep(time.Second) // what the provider last heard of the installation is old
	a.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "waitReady": true}, http.StatusServiceUnavailable, "E2B API")
	if after := len(a.listAll("")); after != before {
		t.Errorf("a refused create left a row: %d sandboxes, then %d", before, after)
	}
	b.restart(serverOpts{bin: sbxBin, args: b.opts.args})
	if res, err := again.Commands.Run(ctx, alive, nil); err != nil || res.ExitCode != 0 || res.Stdout != "kept\n" {
		t.Fatalf("the sandbox once the installation is back: %+v %v", res, err)
	}

	a.call("DELETE", "/api/v1/sandboxes/"+sb.ID(), nil, http.StatusOK, &p)
	if p.State != "killed" {
		t.Errorf("deleted: %s", p.State)
	}
	for _, sb := range madeBy(b, name) {
		if sb.State == "running" || sb.State == "paused" {
			t.Errorf("left on the installation: %s %s", sb.ID, sb.State)
		}
	}
}
