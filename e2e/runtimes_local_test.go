package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// A runtime's whole life in real gVisor sandboxes: its configuration
// reaches the sandbox it starts; pause and resume keep the sandbox's state;
// keepalive extends it; a second start is a 409; reset discards the sandbox
// and the next start makes a fresh one with the same configuration; every
// action on the idle runtime is a 409.
func TestRuntimesInRealSandboxes(t *testing.T) {
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	list, err := c.Runtimes(ctx, "default", "default", client.Page{})
	if err != nil {
		t.Fatal(err)
	}
	id := list.Items[0].ID
	env := map[string]string{"MODE": "dev"}
	memory := int64(512)
	if _, err := c.UpdateRuntime(ctx, "default", "default", id, apiv1.UpdateRuntimeRequest{Env: &env, MemoryMB: &memory}); err != nil {
		t.Fatal(err)
	}
	rt, err := c.StartRuntime(ctx, "default", "default", id, apiv1.StartRuntimeRequest{})
	if err != nil || rt.Status != "running" {
		t.Fatalf("start: %+v %v", rt, err)
	}
	first := rt.SandboxID
	sb := runtimeSandbox(t, ctx, c, rt)
	if out := runIn(t, ctx, sb, `echo "$MODE"; grep -c gvisor /proc/version; echo kept > /workspace/state`); out != "dev\n1\n" {
		t.Fatalf("in the runtime's sandbox: %q", out)
	}

	if rt, err = c.PauseRuntime(ctx, "default", "default", id); err != nil || rt.Status != "paused" {
		t.Fatalf("pause: %+v %v", rt, err)
	}
	if rt, err = c.ResumeRuntime(ctx, "default", "default", id); err != nil || rt.Status != "running" || rt.SandboxID != first {
		t.Fatalf("resume: %+v %v", rt, err)
	}
	if out := runIn(t, ctx, runtimeSandbox(t, ctx, c, rt), "cat /workspace/state"); out != "kept\n" {
		t.Fatalf("after pause and resume: %q", out)
	}
	if rt, err = c.KeepaliveRuntime(ctx, "default", "default", id, 2*time.Hour); err != nil || rt.Sandbox.ExpiresAt.Before(time.Now().Add(time.Hour)) {
		t.Fatalf("keepalive: %+v %v", rt, err)
	}
	s.fail("POST", runtimesPath+"/"+id+"/start", nil, http.StatusConflict, "reset it before starting another")

	if rt, err = c.ResetRuntime(ctx, "default", "default", id); err != nil || rt.Status != "idle" {
		t.Fatalf("reset: %+v %v", rt, err)
	}
	if got := s.get(first); got.State != "killed" {
		t.Fatalf("the reset sandbox: %s", got.State)
	}
	if _, err := s.runsc("state", first); err == nil {
		t.Fatalf("runsc still knows the reset sandbox %s", first)
	}
	if rt, err = c.StartRuntime(ctx, "default", "default", id, apiv1.StartRuntimeRequest{}); err != nil || rt.SandboxID == first {
		t.Fatalf("start after reset: %+v %v", rt, err)
	}
	if out := runIn(t, ctx, runtimeSandbox(t, ctx, c, rt), `echo "$MODE"; cat /workspace/state 2>&1 || true`); !strings.HasPrefix(out, "dev\n") || !strings.Contains(out, "No such file") {
		t.Fatalf("a fresh sandbox with the same configuration: %q", out)
	}
	s.call("POST", runtimesPath+"/"+id+"/reset", nil, http.StatusOK, nil)
	for _, verb := range []string{"pause", "resume", "reset", "keepalive"} {
		s.fail("POST", runtimesPath+"/"+id+"/"+verb, nil, http.StatusConflict, "it has no sandbox (it is idle); start it first")
	}
}

// runtimeSandbox is a handle on the runtime's current sandbox.
func runtimeSandbox(t *testing.T, ctx context.Context, c *client.Client, rt *apiv1.Runtime) *client.Sandbox {
	t.Helper()
	sb, err := c.Connect(ctx, rt.SandboxID, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// runIn runs a command line in sb and returns its stdout; it must exit 0.
func runIn(t *testing.T, ctx context.Context, sb *client.Sandbox, cmd string) string {
	t.Helper()
	res, err := sb.Commands.Run(ctx, cmd, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: %+v %v", cmd, res, err)
	}
	return res.Stdout
}
