package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
)

// One sandbox at a time mounts a volume read-write, any number read-only;
// a volume that sandboxes mount is neither deleted nor resized (409s
// naming them) until they end; a fork of a sandbox that holds a volume
// read-write is refused while it does; names are unique in a project.
func TestVolumeRules(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v, err := e.m.CreateVolume(ctx, e.caller, "data", 64)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.m.CreateVolume(ctx, e.caller, "data", 64)
	wantCode(t, err, sbx.EConflict, "already exists")
	_, err = e.m.CreateVolume(ctx, e.caller, "Bad Name", 64)
	wantCode(t, err, sbx.EInvalid, "not a volume's name")

	writer := e.create(lifecycle.CreateRequest{Volumes: []lifecycle.VolumeAsk{{Name: "data", Path: "/mnt"}}})
	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Volumes: []lifecycle.VolumeAsk{{Name: "data", Path: "/mnt"}}})
	wantCode(t, err, sbx.EConflict, "mounted read-write by sandbox "+writer.ProviderSandboxID)
	reader := e.create(lifecycle.CreateRequest{Volumes: []lifecycle.VolumeAsk{{Name: "data", Path: "/srv", ReadOnly: true}}})
	if got, err := e.m.Detail(ctx, reader); err != nil || len(got.Volumes) != 1 || !got.Volumes[0].ReadOnly || got.Volumes[0].VolumeID != v.ID {
		t.Fatalf("the reader's volumes: %+v, %v", got.Volumes, err)
	}
	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Volumes: []lifecycle.VolumeAsk{{Name: "nope", Path: "/mnt"}}})
	wantCode(t, err, sbx.ENotFound, "volume nope not found")

	_, err = e.m.DeleteVolume(ctx, e.caller, "data")
	wantCode(t, err, sbx.EConflict, writer.ProviderSandboxID)
	_, err = e.m.ResizeVolume(ctx, e.caller, "data", 128)
	wantCode(t, err, sbx.EConflict, reader.ProviderSandboxID)
	_, err = e.m.Fork(ctx, e.caller, writer.ID, 1)
	wantCode(t, err, sbx.EConflict, "mounted read-write")

	for _, sb := range []sbx.Sandbox{writer, reader} {
		if _, err := e.m.Kill(ctx, e.caller, sb.ID); err != nil {
			t.Fatal(err)
		}
	}
	if v, err = e.m.ResizeVolume(ctx, e.caller, "data", 128); err != nil || v.SizeMB != 128 || v.State != sbx.VolumeReady {
		t.Fatalf("resize: %+v, %v", v, err)
	}
	_, err = e.m.ResizeVolume(ctx, e.caller, "data", 64)
	wantCode(t, err, sbx.EInvalid, "a volume grows")
	next := e.create(lifecycle.CreateRequest{Volumes: []lifecycle.VolumeAsk{{Name: "data", Path: "/mnt"}}})
	if _, err := e.m.Kill(ctx, e.caller, next.ID); err != nil {
		t.Fatal(err)
	}
	// Its cap is billed while it lives: 128 MiB for 8 hours at 40
	// nano-credits per GiB-second is 144 micro-credits.
	e.clock.Advance(8 * time.Hour)
	e.loops().Meter(ctx)
	if v, err = e.m.DeleteVolume(ctx, e.caller, v.ID); err != nil || v.State != sbx.VolumeDeleted || v.BilledMicros != 144 {
		t.Fatalf("delete: %+v, %v", v, err)
	}
	e.clock.Advance(time.Hour)
	e.loops().Meter(ctx)
	if got, _, _ := e.m.ListVolumes(ctx, e.caller, sbx.Page{}); len(got) != 0 {
		t.Errorf("deleted volumes listed: %+v", got)
	}
	if ids, _ := e.prov.Volumes(ctx); len(ids) != 0 {
		t.Errorf("the provider still holds %v", ids)
	}
	if _, err := e.m.CreateVolume(ctx, e.caller, "data", 64); err != nil {
		t.Errorf("a deleted volume's name is free again: %v", err)
	}
}

// Volumes and snapshots count against the plan's disk: a volume past it,
// a sandbox whose disk would pass it, and a snapshot once it is full, are
// refused with plan_limit_exceeded.
func TestStorageCountsAgainstThePlansDisk(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	plan := e.caller.Org.Plan
	plan.MaxDiskMB = 1024
	if _, err := e.store.SetPlan(ctx, e.caller.Org.ID, plan); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.CreateVolume(ctx, e.caller, "big", 768); err != nil {
		t.Fatal(err)
	}
	_, err := e.m.CreateVolume(ctx, e.caller, "more", 512)
	wantCode(t, err, sbx.EPlanLimit, "768 MB held")
	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 256, DiskMB: 512}})
	wantCode(t, err, sbx.EPlanLimit, "disk")
	sb := e.create(lifecycle.CreateRequest{Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 256, DiskMB: 256}})
	_, err = e.m.Snapshot(ctx, e.caller, sb.ID, lifecycle.SnapshotRequest{Memory: true})
	wantCode(t, err, sbx.EPlanLimit, "a snapshot")
	if got := e.get(sb.ID); got.State != sbx.StateRunning || got.Intent != sbx.IntentNone {
		t.Errorf("the source after a refused snapshot: %s %s", got.State, got.Intent)
	}
}

// After a restart: a volume whose create was cut short is deleted with
// what the provider made of it; provider volumes no row owns go; a ready
// one stays.
func TestReconcileVolumes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	kept, err := e.m.CreateVolume(ctx, e.caller, "kept", 64)
	if err != nil {
		t.Fatal(err)
	}
	cut := sbx.Volume{ID: uuid.NewString(), OrgID: e.caller.Org.ID, WorkspaceID: e.caller.Workspace.ID, ProjectID: e.caller.Project.ID,
		Name: "cut", Provider: providertest.MemoryName, SizeMB: 64, State: sbx.VolumeCreating, CreatedAt: e.clock.Now()}
	if err := e.store.InsertVolume(ctx, cut); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{cut.ID, uuid.NewString()} { // the cut one's, and an orphan
		if err := e.prov.CreateVolume(ctx, id, 64); err != nil {
			t.Fatal(err)
		}
	}
	e.m = e.manager()
	if err := e.m.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, _ := e.prov.Volumes(ctx); len(ids) != 1 || ids[0] != kept.ID {
		t.Errorf("the provider holds %v, want only %s", ids, kept.ID)
	}
	if _, err := e.m.GetVolume(ctx, e.caller, "cut"); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("the cut volume: %v", err)
	}
	if v, err := e.m.GetVolume(ctx, e.caller, "kept"); err != nil || v.State != sbx.VolumeReady {
		t.Errorf("the kept volume: %+v, %v", v, err)
	}
}
