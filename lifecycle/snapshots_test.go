package lifecycle_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
)

// A snapshot is taken through the table (the source's timeline says so and
// it stays as it was), starts sandboxes of its own with the snapshot's
// sizes and template, is billed per GiB held by the meter until it is
// deleted, and is refused once deleted.
func TestSnapshotLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	src := e.create(lifecycle.CreateRequest{Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 256, DiskMB: 512}, Env: map[string]string{"A": "1"}})
	sn, err := e.m.Snapshot(ctx, e.caller, src.ID, lifecycle.SnapshotRequest{Name: "n", Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	if sn.State != sbx.SnapshotReady || sn.SizeBytes != 1<<30 || sn.SourceSandboxID != src.ID || sn.ProjectID != src.ProjectID || sn.Resources != src.Resources {
		t.Fatalf("snapshot: %+v", sn)
	}
	if got := e.steps(src); got != "creating,ready,snapshotting,snapshotted" || e.get(src.ID).State != sbx.StateRunning {
		t.Errorf("the source's timeline: %s", got)
	}
	child := e.create(lifecycle.CreateRequest{SnapshotID: sn.ID})
	if child.SnapshotID != sn.ID || child.Resources != src.Resources || child.TemplateID != src.TemplateID || child.State != sbx.StateRunning {
		t.Fatalf("child: %+v", child)
	}

	// A paused source stays paused; a running one's snapshot is refused while
	// another operation is under way (the table's intent).
	if _, err := e.m.Pause(ctx, e.caller, src.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Snapshot(ctx, e.caller, src.ID, lifecycle.SnapshotRequest{Memory: true}); err != nil || e.get(src.ID).State != sbx.StatePaused {
		t.Fatalf("a paused source's snapshot: %v, %s", err, e.get(src.ID).State)
	}

	// Storage is billed, per GiB held, under its own resource.
	e.clock.Advance(time.Hour)
	e.loops().Meter(ctx)
	spend, err := e.store.StorageSpending(ctx, e.caller.Org.ID, e.clock.Now().Add(-2*time.Hour), e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	var paid int64
	for _, sp := range spend {
		if sp.Kind != sbx.StorageSnapshot || sp.ProjectID != src.ProjectID {
			t.Errorf("storage spending: %+v", sp)
		}
		paid += sp.Total
	}
	// Two snapshots of 1 GiB for an hour at 40 nano-credits per GiB-second:
	// 144 micro-credits each.
	if paid != 288 {
		t.Errorf("an hour of a 1 GiB snapshot paid %d micro-credits, want 144", paid)
	}

	gone, err := e.m.DeleteSnapshot(ctx, e.caller, sn.ID)
	if err != nil || gone.State != sbx.SnapshotDeleted {
		t.Fatalf("delete: %+v, %v", gone, err)
	}
	if ids, _ := e.prov.Snapshots(ctx); len(ids) != 1 {
		t.Errorf("the provider still holds %v", ids)
	}
	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{SnapshotID: sn.ID})
	wantCode(t, err, sbx.ENotFound, "not found")
	e.clock.Advance(time.Hour)
	e.loops().Meter(ctx)
	if after, _ := e.store.GetSnapshot(ctx, "", sn.ID); after.BilledMicros != gone.BilledMicros {
		t.Errorf("a deleted snapshot was billed again: %d, then %d", gone.BilledMicros, after.BilledMicros)
	}
	// Another org's key neither sees nor starts it.
	_, other := e.otherOrg(1_000_000)
	_, err = e.m.GetSnapshot(ctx, other, sn.ID)
	wantCode(t, err, sbx.ENotFound, "not found")
}

// A fork makes its children from one capture and deletes the capture; a
// child that fails to restore is removed and reported, the others run.
func TestForkPartialFailure(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	failing := map[int]bool{}
	n := 0
	prov := providertest.NewMemory(providertest.MemoryOptions{StateDir: filepath.Join(e.dir, "compute"), FailRestore: func(string) bool {
		n++
		return failing[n]
	}})
	e.prov = prov
	e.m = lifecycle.New(e.store, []sbx.Provider{prov}, lifecycle.Config{DefaultProvider: providertest.MemoryName, MaxForks: 4}, e.clock, slog.New(slog.DiscardHandler))
	parent := e.create(lifecycle.CreateRequest{Metadata: map[string]string{"team": "a"}})
	failing[2] = true
	res, err := e.m.Fork(ctx, e.caller, parent.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Children) != 2 || len(res.Errors) != 1 || !strings.Contains(res.Errors[0], "restoring snapshot") {
		t.Fatalf("fork: %+v", res)
	}
	for _, ch := range res.Children {
		if ch.ForkedFrom != parent.ID || ch.Metadata[lifecycle.ForkOfKey] != parent.ID || ch.Metadata["team"] != "a" || ch.State != sbx.StateRunning {
			t.Errorf("child: %+v", ch)
		}
	}
	all, _, err := e.m.List(ctx, e.caller, ledger.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range all {
		if sb.ForkedFrom == parent.ID && sb.State != sbx.StateRunning && !sb.State.Final() {
			t.Errorf("a half-made child: %+v", sb)
		}
	}
	if ids, _ := prov.Snapshots(ctx); len(ids) != 0 {
		t.Errorf("the fork's capture outlived it: %v", ids)
	}
	if !strings.Contains(e.steps(parent), "snapshotting,snapshotted,forked") {
		t.Errorf("the parent's timeline: %s", e.steps(parent))
	}
	_, err = e.m.Fork(ctx, e.caller, parent.ID, 5)
	wantCode(t, err, sbx.EInvalid, "count must be between 1 and 4")
	if _, err := e.m.Pause(ctx, e.caller, parent.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	_, err = e.m.Fork(ctx, e.caller, parent.ID, 1)
	wantCode(t, err, sbx.EConflict, "it is paused")
}

// After a restart: a snapshot interrupted while it was taken is failed and
// its files removed, a fork's capture is deleted, a restore interrupted
// before its agent had its own token is killed, and snapshot files no row
// owns are removed; a ready snapshot stays.
func TestReconcileSnapshots(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	src := e.create(lifecycle.CreateRequest{})
	ready, err := e.m.Snapshot(ctx, e.caller, src.ID, lifecycle.SnapshotRequest{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	insert := func(purpose sbx.SnapshotPurpose, state sbx.SnapshotState) sbx.Snapshot {
		sn := sbx.Snapshot{ID: uuid.NewString(), OrgID: src.OrgID, WorkspaceID: src.WorkspaceID, ProjectID: src.ProjectID, SourceSandboxID: src.ID,
			Provider: src.Provider, TemplateID: "base", Purpose: purpose, State: state, Memory: true, CreatedAt: e.clock.Now()}
		if err := e.store.InsertSnapshot(ctx, sn); err != nil {
			t.Fatal(err)
		}
		if _, err := e.prov.Snapshot(ctx, src.Handle, sn.ID, true); err != nil {
			t.Fatal(err)
		}
		return sn
	}
	interrupted := insert(sbx.PurposeUser, sbx.SnapshotCreating)
	capture := insert(sbx.PurposeFork, sbx.SnapshotReady)
	if _, err := e.prov.Snapshot(ctx, src.Handle, uuid.NewString(), true); err != nil { // an orphan
		t.Fatal(err)
	}
	restoring := sbx.Sandbox{ID: uuid.NewString(), OrgID: src.OrgID, WorkspaceID: src.WorkspaceID, ProjectID: src.ProjectID, Provider: src.Provider,
		ProviderSandboxID: "irestoring", Kind: sbx.KindTask, TemplateID: "base", State: sbx.StateStarting, Intent: sbx.IntentCreating,
		CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now(), Timeout: time.Hour, Resources: src.Resources, SnapshotID: ready.ID}
	if err := e.store.InsertSandbox(ctx, restoring); err != nil {
		t.Fatal(err)
	}
	if _, err := e.prov.Create(ctx, sbx.Spec{SandboxID: restoring.ID, ProviderSandboxID: restoring.ProviderSandboxID, TemplateID: "base",
		Snapshot: &sbx.SnapshotSource{ID: ready.ID, Handle: ready.Handle, Memory: true}}); err != nil {
		t.Fatal(err)
	}

	e.m = e.manager()
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	for sn, want := range map[string]sbx.SnapshotState{ready.ID: sbx.SnapshotReady, interrupted.ID: sbx.SnapshotFailed, capture.ID: sbx.SnapshotDeleted} {
		if got, _ := e.store.GetSnapshot(ctx, "", sn); got.State != want {
			t.Errorf("snapshot %s: %s, want %s", sn, got.State, want)
		}
	}
	if got := e.get(restoring.ID); got.State != sbx.StateFailed || !strings.Contains(got.Diagnostic, "restore from snapshot") {
		t.Errorf("an interrupted restore: %s %q", got.State, got.Diagnostic)
	}
	if list, _ := e.prov.List(ctx); len(list) != 1 {
		t.Errorf("the provider holds %d sandboxes, want the source alone", len(list))
	}
	if ids, _ := e.prov.Snapshots(ctx); len(ids) != 1 || ids[0] != ready.ID {
		t.Errorf("the provider holds %v, want only %s", ids, ready.ID)
	}
}
