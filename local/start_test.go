package local

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/local/network"
	"github.com/sbxdev/sbx/template"
)

// A sandbox from a template with a start command boots with the command
// running under the agent, tagged start; it is started once per sandbox,
// not again when the sandbox wakes from hibernation.
func TestStartCommandRunsOnceAcrossHibernation(t *testing.T) {
	ctx := context.Background()
	store := template.Store{Dir: t.TempDir()}
	if err := os.Symlink(filepath.Join(templates.Dir, "base"), filepath.Join(store.Dir, "base")); err != nil {
		t.Fatal(err)
	}
	const start = "echo booted >> /workspace/boots; exec sleep 100000"
	if _, err := store.Derive("started", "base", start); err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.BuildSbx(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inst := testenv.NewInstance(t)
	dir := t.TempDir()
	net, err := network.New(network.Config{Pool: inst.Pool, StateDir: filepath.Join(dir, "network"), Table: inst.Name, Nameservers: nil})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{DataDir: dir, Runsc: os.Getenv("SBX_RUNSC"), Templates: store, Network: net, Agent: bin, CgroupParent: inst.Name})
	if err != nil {
		t.Fatal(err)
	}
	id := "t" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	const token = "start-test-token-0123456789abcdef0123456789"
	in, err := p.Create(ctx, sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: id, TemplateID: "started",
		Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 256}, AccessToken: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill(context.Background(), in.Handle)
		for syscall.Unmount(filepath.Join(p.rs.Root, "null-netns"), syscall.MNT_DETACH) == nil {
		}
	})

	first := startCommand(t, p, id, in.Handle, token)
	if first.Cmd != start || !first.Running || first.PID == 0 {
		t.Fatalf("the start command: %+v", first)
	}
	// The agent lists its start command once started, maybe before the
	// command wrote its line: wait for it, so that the checkpoint holds it
	// rather than the line being written after the wake, as cat looks.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := p.rs.Run(ctx, nil, "exec", id, "test", "-s", "/workspace/boots"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the start command wrote nothing to /workspace/boots within a minute")
		}
	}
	if err := p.Hibernate(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	h, err := p.Resume(ctx, in.Handle)
	if err != nil {
		t.Fatal(err)
	}
	if again := startCommand(t, p, id, h, token); again.PID != first.PID || !again.Running {
		t.Errorf("after the wake the start command is %+v, want the same process %d running", again, first.PID)
	}
	if boots := p.execIn(t, id, "cat", "/workspace/boots"); boots != "booted\n" {
		t.Errorf("the start command ran %q, want once", boots)
	}
}

// startCommand waits for the sandbox's agent and answers the command it
// lists with the tag start.
func startCommand(t *testing.T, p *Provider, id string, h sbx.Handle, token string) apiv1.CommandInfo {
	t.Helper()
	addr, err := p.AgentAddr(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest("GET", "http://"+addr+"/commands", nil)
		req.Header.Set(apiv1.AccessTokenHeader, token)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var list apiv1.CommandList
			err = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			for _, c := range list.Items {
				if c.Tag == "start" {
					return c
				}
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(p.cfg.DataDir, "sandboxes", id, "output.log"))
			t.Fatalf("no start command listed by the agent at %s within a minute (last error %v); the sandbox's output:\n%s", addr, err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
