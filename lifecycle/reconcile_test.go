package lifecycle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

func TestReconcileAfterRestart(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	running := e.create(lifecycle.CreateRequest{})
	paused := e.create(lifecycle.CreateRequest{})
	if _, err := e.m.Pause(ctx, e.caller, paused.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	lost := e.create(lifecycle.CreateRequest{})
	crashed := e.create(lifecycle.CreateRequest{})
	killing := e.create(lifecycle.CreateRequest{})

	// While sbx is down: compute disappears, one sandbox dies, a kill was cut
	// short after its intent, and creates were interrupted before and after
	// the provider made the compute.
	if err := e.prov.Kill(ctx, lost.Handle); err != nil {
		t.Fatal(err)
	}
	if err := e.prov.Crash(crashed.ProviderSandboxID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.UpdateSandbox(ctx, killing.ID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.Intent, sb.EndReason = sbx.IntentKilling, sbx.EndDeleted
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	madeButUnsettled := e.insertStarting()
	if _, err := e.prov.Create(ctx, sbx.Spec{SandboxID: madeButUnsettled.ID, ProviderSandboxID: madeButUnsettled.ProviderSandboxID, TemplateID: "base"}); err != nil {
		t.Fatal(err)
	}
	neverMade := e.insertStarting()
	orphan, err := e.prov.Create(ctx, sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: "orphan1", TemplateID: "base"})
	if err != nil {
		t.Fatal(err)
	}

	e.clock.Advance(time.Minute)
	e.m = e.manager()
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}

	check := func(name string, sb sbx.Sandbox, state sbx.State, diag string) {
		t.Helper()
		got := e.get(sb.ID)
		if got.State != state || got.Intent != sbx.IntentNone || !strings.Contains(got.Diagnostic, diag) {
			t.Errorf("%s: state %s intent %q diagnostic %q; want %s with %q", name, got.State, got.Intent, got.Diagnostic, state, diag)
		}
	}
	check("running", running, sbx.StateRunning, "")
	check("paused", paused, sbx.StatePaused, "")
	check("lost", lost, sbx.StateFailed, "no longer has this sandbox")
	check("crashed", crashed, sbx.StateFailed, "stopped running")
	check("killing", killing, sbx.StateKilled, "")
	check("made but unsettled", madeButUnsettled, sbx.StateRunning, "")
	check("never made", neverMade, sbx.StateFailed, "creating was interrupted")
	if got := e.get(madeButUnsettled.ID); got.Handle.IsZero() || got.ExpiresAt.IsZero() {
		t.Errorf("adopted sandbox has no handle or expiry: %+v", got)
	}
	if got := e.steps(e.get(running.ID)); !strings.HasSuffix(got, "adopted") {
		t.Errorf("running timeline %s", got)
	}

	insts, err := e.prov.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, in := range insts {
		held[in.ProviderSandboxID] = true
	}
	for name, id := range map[string]string{"orphan": orphan.ProviderSandboxID, "killing": killing.ProviderSandboxID, "crashed": crashed.ProviderSandboxID} {
		if held[id] {
			t.Errorf("%s compute %s survived reconcile", name, id)
		}
	}
	for _, sb := range []sbx.Sandbox{running, paused, madeButUnsettled} {
		if !held[sb.ProviderSandboxID] {
			t.Errorf("adopted compute %s was destroyed", sb.ProviderSandboxID)
		}
	}
	// The adopted sandboxes are usable.
	if _, err := e.m.Resume(ctx, e.caller, paused.ID, 0); err != nil {
		t.Errorf("resume after restart: %v", err)
	}
	if _, err := e.m.Kill(ctx, e.caller, running.ID); err != nil {
		t.Errorf("kill after restart: %v", err)
	}
}

// insertStarting records a sandbox whose create was cut short by a crash.
func (e *env) insertStarting() sbx.Sandbox {
	e.t.Helper()
	now := e.clock.Now()
	sb := sbx.Sandbox{
		ID: uuid.NewString(), OrgID: e.caller.Org.ID, WorkspaceID: e.caller.Workspace.ID, ProjectID: e.caller.Project.ID,
		Provider: "memory", ProviderSandboxID: "i" + strings.ReplaceAll(uuid.NewString(), "-", "")[:19], Kind: sbx.KindTask,
		TemplateID: "base", State: sbx.StateStarting, Intent: sbx.IntentCreating, CreatedAt: now, UpdatedAt: now,
		Timeout: time.Hour, Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 512},
	}
	if err := e.store.InsertSandbox(context.Background(), sb, sbx.Event{At: now, Step: "creating"}); err != nil {
		e.t.Fatal(err)
	}
	return sb
}

// Compute that dies while sbx runs fails its sandbox at once, with the
// provider's diagnostic, and what is left of it is freed.
func TestWatcherFailsSandboxesThatDie(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.m.RunWatchers(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	sb := e.create(lifecycle.CreateRequest{})
	other := e.create(lifecycle.CreateRequest{})
	for e.get(sb.ID).State != sbx.StateFailed {
		e.prov.Crash(sb.ProviderSandboxID) // until Watch has started
		waitState(t, e, sb.ID, sbx.StateFailed, 10*time.Millisecond)
	}
	got := e.get(sb.ID)
	if got.EndReason != sbx.EndError || got.Diagnostic != "the sandbox crashed" || got.EndedAt.IsZero() {
		t.Fatalf("dead sandbox: %+v", got)
	}
	if in, _ := e.prov.List(context.Background()); len(in) != 1 || in[0].SandboxID != other.ID {
		t.Fatalf("compute after the death: %+v", in)
	}
	if e.get(other.ID).State != sbx.StateRunning {
		t.Fatal("another sandbox was touched")
	}
}

// A create in flight on another serve sharing the ledger (a replica, whose
// owner ID is held live) is left alone by this serve's reconcile at its
// start; once that serve is gone, the sweep of stranded operations (the
// leader's) fails it.
func TestReconcileLeavesALiveReplicasOperations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.insertStarting()
	if _, err := e.store.UpdateSandbox(ctx, sb.ID, func(s *sbx.Sandbox) ([]sbx.Event, error) { s.OpOwner = "replica-b"; return nil, nil }); err != nil {
		t.Fatal(err)
	}
	e.store.Hold(ctx, "replica-b") // SQLite: the owner this process holds is the live one
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.get(sb.ID); got.State != sbx.StateStarting || got.Intent != sbx.IntentCreating {
		t.Fatalf("a live replica's create was settled: %s %s", got.State, got.Intent)
	}
	if err := e.m.ReconcileStranded(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.get(sb.ID); got.State != sbx.StateStarting {
		t.Fatalf("the sweep settled a live replica's create: %s", got.State)
	}
	e.store.Hold(ctx, e.m.Owner()) // replica-b is gone
	if err := e.m.ReconcileStranded(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.get(sb.ID); got.State != sbx.StateFailed || got.EndReason != sbx.EndLost || got.Intent != sbx.IntentNone {
		t.Fatalf("a dead replica's create: %s %s %s", got.State, got.EndReason, got.Intent)
	}
}
