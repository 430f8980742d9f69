package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/opensandbox"
)

// The opensandbox provider end to end: serve A (--provider opensandbox)
// runs its sandboxes on serve B's OpenSandbox API. Commands and files go
// through A's API to execd in B's sandbox; pause/resume keeps a process;
// what execd or the provider cannot do is a 501 naming it; the CLI drives
// it as any; B down is a 503 for a create; A SIGKILLed and restarted
// adopts the running sandbox and deletes one of its instance that no row
// owns; deletes leave nothing on B.
func TestOpenSandboxProviderLocal(t *testing.T) {
	b, keyFile := installation(t)
	name := "e2eos" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	a := startServer(t, serverOpts{bin: sbxBin, args: append([]string{"--provider", "opensandbox", "--name", name, "--hibernate-after", "0"}, openSandboxArgs(b, keyFile)...)})
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
	sb, err := c.Create(ctx, "base", &client.CreateOptions{WaitReady: true, Timeout: time.Hour, MemoryMB: 256, EnvVars: map[string]string{"GREETING": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	onB := madeBy(b, name)
	if sb.Data().Provider != "opensandbox" || len(onB) != 1 || onB[0].SandboxID != sb.SandboxID() || onB[0].Metadata[opensandbox.MetaSandbox] != sb.ID() ||
		onB[0].State != "running" || onB[0].MemoryMB != 256 {
		t.Fatalf("provider %s; the installation's sandboxes: %+v", sb.Data().Provider, onB)
	}

	// Commands and files through execd.
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

	// Pause is the server's, keeping a running process.
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

	// What opensandbox cannot do is a 501 naming it.
	a.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/pause", map[string]any{"hibernate": true}, http.StatusNotImplemented, "provider opensandbox cannot hibernate")
	a.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/fork", map[string]any{"count": 1}, http.StatusNotImplemented, "provider opensandbox")
	a.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/pty", map[string]any{"cols": 80, "rows": 24}, http.StatusNotImplemented, "provider opensandbox")

	// The CLI.
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
	a.ok("sandbox", "resume", id)
	if out := a.ok("exec", id, "--", "cat", "/workspace/cli.txt"); out != "cli\n" {
		t.Errorf("after resume: %q", out)
	}
	a.ok("sandbox", "delete", id, "--yes")
	if st := b.get(id).State; st != "killed" {
		t.Errorf("after sbx sandbox delete the installation's sandbox is %q", st)
	}

	// A sandbox of this instance that no row owns, as a crash between the
	// server's create and the ledger's would leave.
	var orphan apiv1.Sandbox
	b.call("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "metadata": map[string]string{opensandbox.MetaInstance: name, opensandbox.MetaProvider: "opensandbox", opensandbox.MetaSandbox: uuid.NewString()}},
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

	// The server down: a create is a 503 naming it, and records nothing.
	b.stop(syscall.SIGKILL)
	before := len(a.listAll(""))
	time.Sleep(time.Second) // what the provider last heard of the server is old
	a.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "waitReady": true}, http.StatusServiceUnavailable, "OpenSandbox API")
	if after := len(a.listAll("")); after != before {
		t.Errorf("a refused create left a row: %d sandboxes, then %d", before, after)
	}
	b.restart(serverOpts{bin: sbxBin, args: b.opts.args})

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
