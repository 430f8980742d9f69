package local

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
	"github.com/sbxdev/sbx/local/gpu"
	"github.com/sbxdev/sbx/local/network"
	"github.com/sbxdev/sbx/providertest"
	"github.com/sbxdev/sbx/template"
)

// templates holds the base template shared by the tests of every package.
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
		var err error
		if templates, err = testtemplates.Base(); err != nil {
			fmt.Fprintln(os.Stderr, err)
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
	for _, cmd := range []string{"debootstrap", "nft", "ip", "runc"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return cmd
		}
	}
	return ""
}

// newProvider returns a provider with its own data directory, and a name
// (nftables table, namespaces, cgroup parent) and pool of its own
// (testenv.NewInstance); at cleanup every sandbox it holds is destroyed.
func newProvider(t *testing.T) *Provider { return newEngineProvider(t, EngineRunsc) }

// newEngineProvider is newProvider with the given engine.
func newEngineProvider(t *testing.T, engine string) *Provider {
	return newInstanceProvider(t, engine, testenv.NewInstance(t))
}

// newInstanceProvider is newProvider with the given engine and instance.
func newInstanceProvider(t *testing.T, engine string, in testenv.Instance) *Provider {
	return newNetworkProvider(t, engine, in, network.Config{})
}

// newNetworkProvider is newInstanceProvider with a network configured as
// cfg says (its pool, state and table are the instance's).
func newNetworkProvider(t *testing.T, engine string, in testenv.Instance, cfg network.Config) *Provider {
	dir := t.TempDir()
	cfg.Pool, cfg.StateDir, cfg.Table = in.Pool, filepath.Join(dir, "network"), in.Name
	if cfg.Nameservers == nil {
		cfg.Nameservers = []netip.Addr{}
	}
	net, err := network.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{DataDir: dir, Engine: engine, Runsc: os.Getenv("SBX_RUNSC"), Templates: templates, Network: net,
		WatchEvery: 50 * time.Millisecond, CgroupParent: in.Name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		list, _ := p.List(context.Background())
		for _, in := range list {
			p.Kill(context.Background(), in.Handle)
		}
		// runsc bind-mounts an empty network namespace into its root (once
		// per sandbox started at the same time); unmount it so the test's
		// directory can go.
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

// create makes a sandbox with the given memory limit.
func (p *Provider) create(t *testing.T, memoryMB int64) (string, sbx.Handle) {
	t.Helper()
	spec := p.spec(memoryMB)
	in, err := p.Create(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec.ProviderSandboxID, in.Handle
}

// spec is what create asks for: a new ID, the base template, the memory limit.
func (p *Provider) spec(memoryMB int64) sbx.Spec {
	return sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: "t" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12], TemplateID: "base",
		Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: memoryMB}, Env: map[string]string{"GREETING": "hello"}}
}

// execIn runs a command in the sandbox with runsc directly (the agent comes later).
func (p *Provider) execIn(t *testing.T, id string, args ...string) string {
	t.Helper()
	out, err := p.rs.Run(context.Background(), nil, append([]string{"exec", id}, args...)...)
	if err != nil {
		t.Fatalf("exec %v: %v", args, err)
	}
	return string(out)
}

// execDetached starts a command in the sandbox and returns at once; its
// output is discarded (a pipe would be held open by the command).
func (p *Provider) execDetached(t *testing.T, id string, args ...string) {
	t.Helper()
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	if err := p.rs.Start(context.Background(), nil, devnull, append([]string{"exec", "--detach", id}, args...)...); err != nil {
		t.Fatal(err)
	}
}

// counter is an init process that counts in memory and writes the count to
// /tmp/count every 50 ms.
var counter = []string{"/bin/bash", "-c", "i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.05; done"}

// count waits until the sandbox's counter reaches at least min and returns it.
func (p *Provider) count(t *testing.T, id string, min int) int {
	t.Helper()
	for range 200 {
		var n int
		fmt.Sscan(p.execIn(t, id, "/bin/sh", "-c", "cat /tmp/count 2>/dev/null || echo 0"), &n) // not yet written: 0
		if n >= min {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the counter in %s did not reach %d", id, min)
	return 0
}

// A sandbox runs gVisor's kernel on the template's tree with its own writable
// layer, its limits and its network; a kill leaves nothing behind.
func TestSandboxIsolationAndCleanup(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	id, h := p.create(t, 256)
	if v := p.execIn(t, id, "cat", "/proc/version"); !strings.Contains(v, "gvisor") {
		t.Errorf("the sandbox's kernel is not gVisor's: %s", v)
	}
	a, cgroup := p.checkSandbox(t, id, 256)
	if got := p.execIn(t, id, "/bin/bash", "-c", "ulimit -u; df -m / | tail -1"); !strings.HasPrefix(got, fmt.Sprint(maxProcs)+"\n") ||
		!strings.Contains(got, fmt.Sprint(p.cfg.DiskMB)) {
		t.Errorf("process limit and writable layer size: %q", got)
	}
	m, err := p.Metrics(ctx, h)
	if err != nil || m.CPUSeconds <= 0 || m.MemoryBytes <= 0 || m.Processes < 1 || m.DiskUsedBytes <= 0 {
		t.Errorf("metrics %+v, %v", m, err)
	}

	p.killAndCheckGone(t, h, id, cgroup)
	if _, err := os.Stat(a.Netns); !os.IsNotExist(err) {
		t.Errorf("the network namespace survived the kill: %v", err)
	}
	if cs, _ := p.rs.List(ctx); len(cs) != 0 {
		t.Errorf("runsc still lists %+v", cs)
	}
}

// checkSandbox checks what every engine gives a sandbox made by create:
// its env, hostname and cwd, its own writable layer over the template's
// tree, its address, and its memory limit. It returns the network
// attachment and the memory cgroup's limit file.
func (p *Provider) checkSandbox(t *testing.T, id string, memoryMB int64) (network.Attachment, string) {
	t.Helper()
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
	a, ok := p.cfg.Network.Get(id)
	if !ok {
		t.Fatal("no network attachment")
	}
	if got := p.execIn(t, id, "hostname", "-I"); strings.TrimSpace(got) != a.Addr.Addr().String() {
		t.Errorf("the sandbox does not hold its address %s: %s", a.Addr, got)
	}
	cgroup := filepath.Join(p.memoryCgroup(id), "memory.limit_in_bytes")
	if b, err := os.ReadFile(cgroup); err != nil || strings.TrimSpace(string(b)) != fmt.Sprint(memoryMB<<20) {
		t.Errorf("memory limit %q (%v), want %d", b, err, memoryMB<<20)
	}
	return a, cgroup
}

// killAndCheckGone kills a sandbox and checks that its directory, its
// cgroup and its address went with it.
func (p *Provider) killAndCheckGone(t *testing.T, h sbx.Handle, id, cgroup string) {
	t.Helper()
	if err := p.Kill(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.dir(id)); !os.IsNotExist(err) {
		t.Errorf("the sandbox directory survived the kill: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(cgroup)); !os.IsNotExist(err) {
		t.Errorf("the cgroup survived the kill: %v", err)
	}
	if _, ok := p.cfg.Network.Get(id); ok {
		t.Error("the address was not returned to the pool")
	}
}

func (p *Provider) mustTemplate(t *testing.T) template.Template {
	tmpl, err := p.cfg.Templates.Current("base")
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// Pause keeps processes; hibernate releases them and their memory, and wake
// brings back the file written before and the count kept in memory.
func TestPauseAndHibernateKeepState(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	p.cfg.Init = counter
	id, h := p.create(t, 256)
	p.count(t, id, 1)
	p.execIn(t, id, "/bin/sh", "-c", "echo kept > /workspace/file")

	if err := p.Pause(ctx, h); err != nil {
		t.Fatal(err)
	}
	if !p.alive(id) {
		t.Fatal("a paused sandbox has no processes")
	}
	if _, err := p.Resume(ctx, h); err != nil {
		t.Fatal(err)
	}
	before := p.count(t, id, 2)

	if err := p.Hibernate(ctx, h); err != nil {
		t.Fatal(err)
	}
	if p.alive(id) {
		t.Fatal("a hibernated sandbox still has processes")
	}
	if _, err := os.Stat(p.memoryCgroup(id)); !os.IsNotExist(err) {
		t.Errorf("a hibernated sandbox still holds its cgroup: %v", err)
	}
	if _, err := p.Resume(ctx, h); err != nil {
		t.Fatal(err)
	}
	if got := p.execIn(t, id, "cat", "/workspace/file"); got != "kept\n" {
		t.Errorf("file after wake: %q", got)
	}
	after := p.count(t, id, before)
	if later := p.count(t, id, after+1); later <= after {
		t.Error("the counter does not run after wake")
	}
	if _, err := os.Stat(p.imageDir(id)); !os.IsNotExist(err) {
		t.Error("the checkpoint outlived the wake")
	}
}

// A sandbox that allocates past its memory limit dies and is reported out of
// memory; one whose runsc is killed is reported with its last log lines.
func TestWatchReportsDeaths(t *testing.T) {
	p := newProvider(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	died := make(chan sbx.Died, 4)
	go p.Watch(ctx, func(d sbx.Died) { died <- d })

	oom, _ := p.create(t, 128)
	other, _ := p.create(t, 128)
	p.execDetached(t, oom, "/usr/bin/tail", "/dev/zero")
	d := <-died
	if d.ProviderSandboxID != oom || !strings.Contains(d.Diagnostic, "out of memory") || !strings.Contains(d.Diagnostic, "128 MB") {
		t.Fatalf("died %+v, want %s out of memory", d, oom)
	}

	st, err := p.rs.State(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	syscall.Kill(st.PID, syscall.SIGKILL)
	d = <-died
	if d.ProviderSandboxID != other || !strings.Contains(d.Diagnostic, "stopped running") {
		t.Fatalf("died %+v, want %s stopped", d, other)
	}
	list, _ := p.List(ctx)
	for _, in := range list {
		if in.Status != sbx.InstanceDead {
			t.Errorf("List says %s is %s", in.ProviderSandboxID, in.Status)
		}
	}
}

// A fork bomb stops at the process limit and harms neither the host nor
// another sandbox.
func TestForkBombIsContained(t *testing.T) {
	p := newProvider(t)
	bomb, _ := p.create(t, 512)
	other, _ := p.create(t, 256)
	p.execDetached(t, bomb, "/bin/bash", "-c", "b() { b | b & }; b")
	time.Sleep(2 * time.Second) // let it grow to its limit
	if got := p.execIn(t, other, "echo", "fine"); got != "fine\n" {
		t.Fatalf("the other sandbox: %q", got)
	}
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Fatalf("the host cannot start a process: %v", err)
	}
	if p.alive(bomb) {
		out, _ := p.rs.Run(context.Background(), nil, "exec", bomb, "/bin/sh", "-c", "ls /proc | grep -c '^[0-9]'")
		var n int
		fmt.Sscan(string(out), &n)
		if n > maxProcs+10 {
			t.Errorf("%d processes in the bombed sandbox, over the limit %d", n, maxProcs)
		}
	}
}

// After a restart, a new provider lists running, paused and hibernated
// sandboxes as they are, and lists leftovers no record owns for removal.
func TestListAfterRestart(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	running, _ := p.create(t, 128)
	paused, ph := p.create(t, 128)
	hib, hh := p.create(t, 128)
	if err := p.Pause(ctx, ph); err != nil {
		t.Fatal(err)
	}
	if err := p.Hibernate(ctx, hh); err != nil {
		t.Fatal(err)
	}
	if _, err := p.cfg.Network.Attach(ctx, "orphan-net", network.Policy{}); err != nil {
		t.Fatal(err)
	}
	q, err := New(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]sbx.InstanceStatus{}
	list, err := q.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		got[in.ProviderSandboxID] = in.Status
		if in.ProviderSandboxID == "orphan-net" && in.SandboxID != "" {
			t.Error("an orphan network attachment is listed with an owner")
		}
	}
	want := map[string]sbx.InstanceStatus{running: sbx.InstanceRunning, paused: sbx.InstancePaused, hib: sbx.InstanceHibernated, "orphan-net": sbx.InstanceDead}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after restart List = %v, want %v", got, want)
	}
	if err := q.Kill(ctx, sbx.IDHandle("orphan-net")); err != nil {
		t.Fatal(err)
	}
	if _, ok := q.cfg.Network.Get("orphan-net"); ok {
		t.Error("killing an orphan left its network")
	}
	if _, err := q.Resume(ctx, hh); err != nil {
		t.Fatalf("wake after restart: %v", err)
	}
}

func TestUnknownTemplate(t *testing.T) {
	p := newProvider(t)
	spec := sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: "tnope", TemplateID: "nope"}
	err := p.Admit(context.Background(), spec)
	msg := sbx.ErrorMessage(err)
	if sbx.ErrorCode(err) != sbx.ENotFound || !strings.HasPrefix(msg, "template nope does not exist on this server; its templates: ") || !strings.Contains(msg, "base") {
		t.Fatalf("Admit of an unknown template: %v", err)
	}
	if !strings.Contains(err.Error(), "sbx template build nope") {
		t.Fatalf("the operator's hint is not the internal cause: %v", err)
	}
	_, err = p.Create(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), "sbx template build nope") {
		t.Fatalf("unknown template: %v", err)
	}
	if _, err := os.Stat(p.dir("tnope")); !os.IsNotExist(err) {
		t.Fatal("a failed create left its directory")
	}
}

// GPU requests are placed on the configured inventory: one that does not
// fit is refused before anything is made, and a create that cannot pass the
// devices (no driver on this host) gives its share back.
func TestGPUAdmissionAndRelease(t *testing.T) {
	p := newProvider(t)
	inv, err := gpu.ParseInventory("h100:1")
	if err != nil {
		t.Fatal(err)
	}
	p.cfg.GPUs = gpu.NewPlacer(inv)
	ctx := context.Background()
	spec := func(req sbx.GPURequest) sbx.Spec {
		return sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: "tgpu" + uuid.NewString()[:8], TemplateID: "base",
			Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 128, GPU: &req}}
	}
	err = p.Admit(ctx, spec(sbx.GPURequest{Type: "a100", Count: 1, Fraction: 100}))
	if sbx.ErrorCode(err) != sbx.EConflict || !strings.Contains(err.Error(), `no GPU of type "a100" on this host (it has: h100 ×1)`) {
		t.Fatalf("a GPU type the host lacks: %v", err)
	}
	half := spec(sbx.GPURequest{Type: "h100", Count: 1, Fraction: 50})
	if err := p.Admit(ctx, half); err != nil {
		t.Fatalf("half an h100: %v", err)
	}
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this host has an NVIDIA driver; the passthrough is checked on a GPU machine")
	}
	if _, err := p.Create(ctx, half); err == nil || !strings.Contains(err.Error(), "/dev/nvidiactl") {
		t.Fatalf("a create without the driver's devices: %v", err)
	}
	for _, u := range p.cfg.GPUs.Usage() {
		if u.Percent != 0 {
			t.Fatalf("a failed create kept its GPU share: %+v", u)
		}
	}
}
