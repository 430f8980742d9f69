package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/local/gpu"
	"github.com/sbxdev/sbx/providertest"
)

func TestRuncConformance(t *testing.T) {
	providertest.Run(t, providertest.Factory{
		New: func(t *testing.T) sbx.Provider { return newEngineProvider(t, EngineRunc) },
		Reopen: func(t *testing.T, p sbx.Provider) sbx.Provider {
			q, err := New(p.(*Provider).cfg)
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
		Template: "base",
	})
}

// A runc sandbox runs the template's tree under its own upper layer, on the
// host's kernel, with its limits and network; what runc cannot do is refused
// with an error that says so; a kill unmounts and removes everything.
func TestRuncSandbox(t *testing.T) {
	p := newEngineProvider(t, EngineRunc)
	ctx := context.Background()
	if c := p.Capabilities(); c.Hibernate || c.GPU || !c.MemoryPause {
		t.Errorf("runc capabilities %+v", c)
	}
	id, h := p.create(t, 256)
	host, _ := os.ReadFile("/proc/version")
	if v := p.execIn(t, id, "cat", "/proc/version"); v != string(host) {
		t.Errorf("a runc sandbox runs the host's kernel, not %q", v)
	}
	_, cgroup := p.checkSandbox(t, id, 256)
	p.execIn(t, id, "/bin/sh", "-c", "head -c 1000000 /dev/zero > /workspace/blob")
	if got := p.execIn(t, id, "/bin/sh", "-c", "test -c /dev/pts/ptmx && echo pts"); got != "pts\n" {
		t.Errorf("no /dev/pts: %q", got)
	}
	pids := filepath.Join(cgroupRoot, "pids", p.cgroupsPath(id), "pids.max")
	if unified() {
		pids = filepath.Join(cgroupRoot, p.cgroupsPath(id), "pids.max")
	}
	if b, err := os.ReadFile(pids); err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(maxProcs) {
		t.Errorf("process limit %q (%v), want %d", b, err, maxProcs)
	}
	m, err := p.Metrics(ctx, h)
	if err != nil || m.MemoryBytes <= 0 || m.Processes < 1 || m.DiskUsedBytes < 1000000 {
		t.Errorf("metrics %+v, %v", m, err)
	}

	if err := p.Hibernate(ctx, h); sbx.ErrorCode(err) != sbx.EUnsupported || !strings.Contains(err.Error(), "runc") {
		t.Errorf("Hibernate under runc: %v", err)
	}
	inv, err := gpu.ParseInventory("h100:1")
	if err != nil {
		t.Fatal(err)
	}
	p.cfg.GPUs = gpu.NewPlacer(inv)
	req := sbx.GPURequest{Type: "h100", Count: 1, Fraction: 100}
	err = p.Admit(ctx, sbx.Spec{ProviderSandboxID: "tgpu", TemplateID: "base", Resources: sbx.Resources{GPU: &req}})
	if sbx.ErrorCode(err) != sbx.EUnsupported || !strings.Contains(err.Error(), "runsc engine") {
		t.Errorf("a GPU request under runc: %v", err)
	}
	if _, err := New(Config{DataDir: p.cfg.DataDir, Runsc: p.cfg.Runsc, Templates: p.cfg.Templates}); err == nil ||
		!strings.Contains(err.Error(), "runs with runc, not runsc") {
		t.Errorf("reopening a runc host's data dir with runsc: %v", err)
	}

	p.killAndCheckGone(t, h, id, cgroup)
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), p.dir(id)) {
		t.Error("the sandbox's root is still mounted")
	}
}

// runsc takes an ID for any container it is a prefix of: two sandboxes may
// not have IDs that start one another, and killing a sandbox that is already
// gone must not kill another whose ID starts with its own.
func TestPrefixedIDs(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	short := "t" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8]
	create := func(id string) error {
		_, err := p.Create(ctx, sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: id, TemplateID: "base",
			Resources: sbx.Resources{MilliCPU: 500, MemoryMB: 128}})
		return err
	}
	if err := create(short); err != nil {
		t.Fatal(err)
	}
	if err := create(short + "0"); err == nil || !strings.Contains(err.Error(), "clashes with sandbox") {
		t.Fatalf("a sandbox whose ID another's starts: %v", err)
	}
	if _, err := os.Stat(p.dir(short + "0")); !os.IsNotExist(err) {
		t.Fatal("a refused create left its directory")
	}
	if err := p.Kill(ctx, sbx.IDHandle(short)); err != nil {
		t.Fatal(err)
	}
	if err := create(short + "0"); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(ctx, sbx.IDHandle(short)); err != nil {
		t.Fatal(err)
	}
	if st, err := p.rs.State(ctx, short+"0"); err != nil || st.ID != short+"0" || st.Status != "running" {
		t.Fatalf("the sandbox %s0 after killing %s twice: %+v, %v", short, short, st, err)
	}
	if _, err := p.rs.State(ctx, "tnone"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state of a container that does not exist: %v", err)
	}
}
