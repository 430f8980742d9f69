package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/providertest"
	"github.com/sbxdev/sbx/template"
)

// templates holds a base template built once for the package's tests.
var templates template.Store

func TestMain(m *testing.M) {
	code := func() int {
		if why := missing(); why != "" {
			if testenv.InCI() {
				fmt.Fprintln(os.Stderr, "local provider tests need", why)
				return 1
			}
			fmt.Fprintln(os.Stderr, "skipping the local provider tests: they need", why)
			return 0
		}
		dir, err := os.MkdirTemp("", "sbx-local-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		templates = template.Store{Dir: filepath.Join(dir, "templates")}
		if _, err := templates.BuildDebian(context.Background(), "base", template.DebianOptions{}, io.Discard); err != nil {
			fmt.Fprintln(os.Stderr, "building the base template:", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// missing names what the real provider needs and this host lacks.
func missing() string {
	if os.Geteuid() != 0 {
		return "root"
	}
	if os.Getenv("SBX_RUNSC") == "" {
		return "$SBX_RUNSC (scripts/test.sh builds runsc and sets it)"
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return "debootstrap"
	}
	return ""
}

func newProvider(t *testing.T) *Provider {
	p, err := New(Config{DataDir: t.TempDir(), Runsc: os.Getenv("SBX_RUNSC"), Templates: templates})
	if err != nil {
		t.Fatal(err)
	}
	// runsc bind-mounts an empty network namespace into its root for
	// --network=none (twice, when sandboxes start together); unmount it so
	// the test's directory can go.
	t.Cleanup(func() {
		for syscall.Unmount(filepath.Join(p.rs.Root, "null-netns"), syscall.MNT_DETACH) == nil {
		}
	})
	return p
}

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Factory{
		New: func(t *testing.T) sbx.Provider { return newProvider(t) },
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

// exec runs a command in the sandbox with runsc directly.
func (p *Provider) execIn(t *testing.T, id string, args ...string) string {
	t.Helper()
	out, err := p.rs.Run(context.Background(), nil, append([]string{"exec", id}, args...)...)
	if err != nil {
		t.Fatalf("exec %v: %v", args, err)
	}
	return string(out)
}

// A sandbox runs gVisor's kernel on the template's tree with its own writable
// layer and its limits; a kill leaves nothing behind.
func TestSandboxIsolationAndCleanup(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	id := "t" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	in, err := p.Create(ctx, sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: id, TemplateID: "base",
		Resources: sbx.Resources{MilliCPU: 500, MemoryMB: 256}, Env: map[string]string{"GREETING": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if v := p.execIn(t, id, "cat", "/proc/version"); !strings.Contains(v, "gvisor") {
		t.Errorf("the sandbox's kernel is not gVisor's: %s", v)
	}
	if got := p.execIn(t, id, "/bin/sh", "-c", "echo $GREETING; hostname; pwd"); got != "hello\n"+id+"\n/workspace\n" {
		t.Errorf("env, hostname, cwd: %q", got)
	}
	p.execIn(t, id, "/bin/sh", "-c", "echo written > /etc/sbx-marker")
	if _, err := os.Stat(filepath.Join(p.mustTemplate(t).Rootfs(), "etc/sbx-marker")); err == nil {
		t.Fatal("a write in the sandbox reached the template's tree")
	}
	if got := p.execIn(t, id, "cat", "/etc/sbx-marker"); got != "written\n" {
		t.Errorf("the sandbox does not see its own write: %q", got)
	}
	cgroup := "/sys/fs/cgroup/memory/sbx/" + id + "/memory.limit_in_bytes"
	if b, err := os.ReadFile(cgroup); err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(256<<20) {
		t.Errorf("memory limit %q (%v), want %d", b, err, 256<<20)
	}
	if err := p.Kill(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.dir(id)); !os.IsNotExist(err) {
		t.Errorf("the sandbox directory survived the kill: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(cgroup)); !os.IsNotExist(err) {
		t.Errorf("the cgroup survived the kill: %v", err)
	}
	if cs, _ := p.rs.List(ctx); len(cs) != 0 {
		t.Errorf("runsc still lists %+v", cs)
	}
}

func (p *Provider) mustTemplate(t *testing.T) template.Template {
	tmpl, err := p.cfg.Templates.Current("base")
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestUnknownTemplate(t *testing.T) {
	p := newProvider(t)
	_, err := p.Create(context.Background(), sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: "tnope", TemplateID: "nope"})
	if err == nil || !strings.Contains(err.Error(), "sbx template build nope") {
		t.Fatalf("unknown template: %v", err)
	}
	if _, err := os.Stat(p.dir("tnope")); !os.IsNotExist(err) {
		t.Fatal("a failed create left its directory")
	}
}
