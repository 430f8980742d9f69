// Package providertest is the conformance suite every sbx.Provider must pass,
// and Memory, a provider for tests. Nothing here is linked into the sbx binary.
package providertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// Factory makes providers for the suite.
type Factory struct {
	// New returns a provider holding no compute; the suite kills what it makes.
	New func(t *testing.T) sbx.Provider
	// Reopen returns a fresh instance of p's provider over the same compute,
	// as after a restart of sbx. Nil when the provider cannot outlive its process.
	Reopen func(t *testing.T, p sbx.Provider) sbx.Provider
	// Template is a template the provider can create from.
	Template string
	// Timeout bounds each operation (default one minute).
	Timeout time.Duration
}

// Run runs the conformance suite against f.
func Run(t *testing.T, f Factory) {
	if f.Timeout == 0 {
		f.Timeout = time.Minute
	}
	t.Run("Identity", func(t *testing.T) {
		p := f.New(t)
		if p.Name() == "" {
			t.Fatal("Name() is empty")
		}
	})
	t.Run("CreateListKill", func(t *testing.T) { testCreateListKill(t, f) })
	t.Run("PauseResume", func(t *testing.T) { testPauseResume(t, f) })
	if p := f.New(t); p.Capabilities().Hibernate {
		t.Run("HibernateWake", func(t *testing.T) { testHibernate(t, f) })
	}
	if _, ok := f.New(t).(sbx.EgressSetter); ok {
		t.Run("Egress", func(t *testing.T) { testEgress(t, f) })
	}
	t.Run("ConcurrentCreates", func(t *testing.T) { testConcurrent(t, f) })
	t.Run("CanceledCreate", func(t *testing.T) { testCanceled(t, f) })
	t.Run("BadHandle", func(t *testing.T) { testBadHandle(t, f) })
	if f.Reopen != nil {
		t.Run("RecoverFromHandle", func(t *testing.T) { testReopen(t, f) })
	}
}

func (f Factory) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), f.Timeout)
	t.Cleanup(cancel)
	return ctx
}

// create makes one sandbox and registers its kill.
func (f Factory) create(t *testing.T, p sbx.Provider) (sbx.Spec, sbx.Instance) {
	t.Helper()
	spec := sbx.Spec{
		SandboxID: uuid.NewString(), ProviderSandboxID: "conf" + uuid.NewString()[:8], TemplateID: f.Template, Kind: sbx.KindTask,
		Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 256}, Env: map[string]string{"SBX_CONFORMANCE": "1"}, AccessToken: suiteToken,
	}
	in, err := p.Create(f.ctx(t), spec)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { p.Kill(context.Background(), in.Handle) })
	return spec, in
}

// suiteToken is the access token of every sandbox the suite makes.
const suiteToken = "conformance-token-0123456789abcdef"

// resume resumes h, with the suite's token where the provider boots new
// compute on resume (sbx.TokenResumer).
func resume(ctx context.Context, p sbx.Provider, h sbx.Handle) (sbx.Handle, error) {
	if r, ok := p.(sbx.TokenResumer); ok {
		return r.ResumeWithToken(ctx, h, suiteToken)
	}
	return p.Resume(ctx, h)
}

// find returns the listed instance for sandboxID.
func find(t *testing.T, ctx context.Context, p sbx.Provider, sandboxID string) (sbx.Instance, bool) {
	t.Helper()
	list, err := p.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, in := range list {
		if in.SandboxID == sandboxID {
			return in, true
		}
	}
	return sbx.Instance{}, false
}

func wantStatus(t *testing.T, ctx context.Context, p sbx.Provider, sandboxID string, want sbx.InstanceStatus) {
	t.Helper()
	in, ok := find(t, ctx, p, sandboxID)
	if !ok {
		t.Fatalf("List does not show sandbox %s", sandboxID)
	}
	if in.Status != want {
		t.Fatalf("sandbox %s is %s, want %s", sandboxID, in.Status, want)
	}
}

func testCreateListKill(t *testing.T, f Factory) {
	p, ctx := f.New(t), f.ctx(t)
	spec, in := f.create(t, p)
	if in.SandboxID != spec.SandboxID {
		t.Errorf("instance SandboxID = %q, want %q", in.SandboxID, spec.SandboxID)
	}
	if in.ProviderSandboxID == "" || in.Handle.IsZero() {
		t.Errorf("instance has no provider ID or handle: %+v", in)
	}
	if in.Status != sbx.InstanceRunning {
		t.Errorf("new instance is %s, want running", in.Status)
	}
	wantStatus(t, ctx, p, spec.SandboxID, sbx.InstanceRunning)
	if err := p.Kill(ctx, in.Handle); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, ok := find(t, ctx, p, spec.SandboxID); ok {
		t.Fatal("List still shows a killed sandbox")
	}
	if err := p.Kill(ctx, in.Handle); err != nil {
		t.Fatalf("a second Kill must succeed, got %v", err)
	}
}

func testPauseResume(t *testing.T, f Factory) {
	p, ctx := f.New(t), f.ctx(t)
	spec, in := f.create(t, p)
	if err := p.Pause(ctx, in.Handle); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	wantStatus(t, ctx, p, spec.SandboxID, sbx.InstancePaused)
	if err := p.Pause(ctx, in.Handle); err == nil {
		t.Error("pausing a paused sandbox must fail")
	}
	h, err := resume(ctx, p, in.Handle)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if h.IsZero() {
		t.Fatal("Resume returned an empty handle")
	}
	wantStatus(t, ctx, p, spec.SandboxID, sbx.InstanceRunning)
	if _, err := resume(ctx, p, h); err == nil {
		t.Error("resuming a running sandbox must fail")
	}
}

// testHibernate hibernates a running and a paused sandbox, wakes them, and,
// when the provider can be reopened, wakes one hibernated by an earlier process.
func testHibernate(t *testing.T, f Factory) {
	p, ctx := f.New(t), f.ctx(t)
	hib := p.(sbx.Hibernator)
	spec, in := f.create(t, p)
	if err := hib.Hibernate(ctx, in.Handle); err != nil {
		t.Fatalf("Hibernate: %v", err)
	}
	wantStatus(t, ctx, p, spec.SandboxID, sbx.InstanceHibernated)
	if err := hib.Hibernate(ctx, in.Handle); err == nil {
		t.Error("hibernating a hibernated sandbox must fail")
	}
	if err := p.Pause(ctx, in.Handle); err == nil {
		t.Error("pausing a hibernated sandbox must fail")
	}
	h, err := resume(ctx, p, in.Handle)
	if err != nil {
		t.Fatalf("Resume of a hibernated sandbox: %v", err)
	}
	wantStatus(t, ctx, p, spec.SandboxID, sbx.InstanceRunning)

	if err := p.Pause(ctx, h); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if err := hib.Hibernate(ctx, h); err != nil {
		t.Fatalf("Hibernate of a paused sandbox: %v", err)
	}
	wantStatus(t, ctx, p, spec.SandboxID, sbx.InstanceHibernated)
	if f.Reopen != nil {
		p = f.Reopen(t, p)
	}
	if h, err = resume(ctx, p, h); err != nil {
		t.Fatalf("Resume of a sandbox hibernated by an earlier process: %v", err)
	}
	wantStatus(t, ctx, p, spec.SandboxID, sbx.InstanceRunning)
	if err := p.Kill(ctx, h); err != nil {
		t.Fatal(err)
	}
}

func testConcurrent(t *testing.T, f Factory) {
	p, ctx := f.New(t), f.ctx(t)
	const n = 4
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec, _ := f.create(t, p)
			ids[i] = spec.SandboxID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		wantStatus(t, ctx, p, id, sbx.InstanceRunning)
	}
}

func testCanceled(t *testing.T, f Factory) {
	p := f.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	spec := sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: "conf" + uuid.NewString()[:8], TemplateID: f.Template, Kind: sbx.KindTask}
	in, err := p.Create(ctx, spec)
	if err == nil {
		p.Kill(context.Background(), in.Handle)
		t.Fatal("Create with a canceled context succeeded")
	}
	if _, ok := find(t, f.ctx(t), p, spec.SandboxID); ok {
		t.Fatal("a canceled Create left compute behind")
	}
}

func testBadHandle(t *testing.T, f Factory) {
	p, ctx := f.New(t), f.ctx(t)
	for _, h := range []sbx.Handle{{}, {Version: 99, Data: []byte(`{}`)}} {
		if err := p.Pause(ctx, h); err == nil {
			t.Errorf("Pause(%+v) succeeded", h)
		}
		if _, err := resume(ctx, p, h); err == nil {
			t.Errorf("Resume(%+v) succeeded", h)
		}
	}
}

func testReopen(t *testing.T, f Factory) {
	p, ctx := f.New(t), f.ctx(t)
	spec, in := f.create(t, p)
	q := f.Reopen(t, p)
	got, ok := find(t, ctx, q, spec.SandboxID)
	if !ok {
		t.Fatal("a reopened provider does not list compute made before")
	}
	if err := q.Pause(ctx, in.Handle); err != nil {
		t.Fatalf("Pause through the old handle after reopening: %v", err)
	}
	if err := q.Kill(ctx, got.Handle); err != nil {
		t.Fatalf("Kill through the listed handle after reopening: %v", err)
	}
	if _, ok := find(t, ctx, q, spec.SandboxID); ok {
		t.Fatalf("sandbox %s survived Kill after reopening", spec.SandboxID)
	}
}

// testEgress: an sbx.EgressSetter takes a policy at create and a new one
// on a running, paused and (when it hibernates) hibernated sandbox, the
// same one again too; a killed sandbox's is an error.
func testEgress(t *testing.T, f Factory) {
	p := f.New(t)
	setter := p.(sbx.EgressSetter)
	ctx := f.ctx(t)
	spec := sbx.Spec{
		SandboxID: uuid.NewString(), ProviderSandboxID: "conf" + uuid.NewString()[:8], TemplateID: f.Template, Kind: sbx.KindTask,
		Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 256}, AccessToken: suiteToken, Egress: sbx.Egress{Mode: sbx.EgressNone},
	}
	in, err := p.Create(ctx, spec)
	if err != nil {
		t.Fatalf("Create with egress none: %v", err)
	}
	allow := sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"203.0.113.0/24"}, Deny: []string{"203.0.113.7/32"}}
	for range 2 {
		if err := setter.SetEgress(ctx, in.Handle, allow); err != nil {
			t.Fatalf("SetEgress on a running sandbox: %v", err)
		}
	}
	if err := p.Pause(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	if err := setter.SetEgress(ctx, in.Handle, sbx.Egress{Mode: sbx.EgressInternet}); err != nil {
		t.Fatalf("SetEgress on a paused sandbox: %v", err)
	}
	h := in.Handle
	if hib, ok := p.(sbx.Hibernator); ok && p.Capabilities().Hibernate {
		if err := hib.Hibernate(ctx, h); err != nil {
			t.Fatal(err)
		}
		if err := setter.SetEgress(ctx, h, allow); err != nil {
			t.Fatalf("SetEgress on a hibernated sandbox: %v", err)
		}
	}
	if h, err = resume(ctx, p, h); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := setter.SetEgress(ctx, h, allow); err == nil {
		t.Error("SetEgress on a killed sandbox succeeded")
	}
}
