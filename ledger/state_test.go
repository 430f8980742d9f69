package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// Snapshots, volumes and warm pools on both dialects: a snapshot's row and
// its sealed token, its storage settled; one read-write mount of a volume
// at a time, its users; a pool member checked out once, with its new
// owner's fields, settled to its old owner first.
func TestBranchingState(t *testing.T) { dialects(t, branchingState) }

func branchingState(t *testing.T, dsn string) {
	ctx := context.Background()
	s := open(t, dsn)
	org, ws, p, err := s.CreateOrg(ctx, "acme", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TopUp(ctx, org.ID, 1_000_000, "test", t0); err != nil {
		t.Fatal(err)
	}
	src := newSandbox(org, ws, p, t0)
	src.Resources.GPU = nil
	if err := s.InsertSandbox(ctx, src); err != nil {
		t.Fatal(err)
	}

	sn := sbx.Snapshot{ID: uuid.NewString(), OrgID: org.ID, WorkspaceID: ws.ID, ProjectID: p.ID, SourceSandboxID: src.ID, Provider: "memory",
		TemplateID: "base", Memory: true, State: sbx.SnapshotCreating, Resources: src.Resources, AccessToken: "held", CreatedAt: t0, LastSettledAt: t0}
	if err := s.InsertSnapshot(ctx, sn); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateSnapshot(ctx, sn.ID, t0, func(x *sbx.Snapshot) error {
		x.State, x.SizeBytes, x.ReadyAt = sbx.SnapshotReady, 1<<30, t0
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	st, err := s.SettleSnapshot(ctx, sn.ID, t0.Add(time.Hour))
	if err != nil || st.Paid != 144 || st.Kind != sbx.StorageSnapshot || st.ProjectID != p.ID {
		t.Fatalf("settling an hour of 1 GiB: %+v, %v", st, err)
	}
	got, err := s.GetSnapshot(ctx, org.ID, sn.ID)
	if err != nil || got.AccessToken != "held" || got.BilledMicros != 144 || !got.Memory {
		t.Fatalf("snapshot: %+v, %v", got, err)
	}
	// What stands on template base: the source sandbox and the snapshot
	// (not the template's own ready ones), by their public IDs.
	if u, err := s.TemplateUsers(ctx, src.TemplateID, 20); err != nil || len(u.Sandboxes) != 1 || u.Sandboxes[0] != src.ProviderSandboxID || len(u.Snapshots) != 1 || u.Snapshots[0] != sn.ID {
		t.Fatalf("template users: %+v, %v", u, err)
	}
	if u, err := s.TemplateUsers(ctx, "other", 20); err != nil || len(u.Sandboxes)+len(u.Snapshots) != 0 {
		t.Fatalf("users of another template: %+v, %v", u, err)
	}
	if list, _, err := s.ListSnapshots(ctx, sbx.SnapshotFilter{OrgID: org.ID}); err != nil || len(list) != 1 {
		t.Fatalf("list: %v, %v", list, err)
	}
	if open, err := s.OpenSnapshots(ctx, ""); err != nil || len(open) != 1 {
		t.Fatalf("open snapshots: %v, %v", open, err)
	}

	vol := sbx.Volume{ID: uuid.NewString(), OrgID: org.ID, WorkspaceID: ws.ID, ProjectID: p.ID, Name: "data", Provider: "memory",
		SizeMB: 64, State: sbx.VolumeReady, CreatedAt: t0}
	if err := s.InsertVolume(ctx, vol); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertVolume(ctx, vol); sbx.ErrorCode(err) == "" {
		t.Error("a second volume of the same ID and name went in")
	}
	writer := newSandbox(org, ws, p, t0)
	writer.Resources.GPU = nil
	writer.Volumes = []sbx.VolumeMount{{VolumeID: vol.ID, Name: "data", Path: "/mnt"}}
	if err := s.InsertSandbox(ctx, writer); err != nil {
		t.Fatal(err)
	}
	second := newSandbox(org, ws, p, t0)
	second.Resources.GPU = nil
	second.Volumes = writer.Volumes
	if err := s.InsertSandbox(ctx, second); sbx.ErrorCode(err) != sbx.EConflict {
		t.Errorf("a second writer: %v", err)
	}
	second.Volumes = []sbx.VolumeMount{{VolumeID: vol.ID, Name: "data", Path: "/srv", ReadOnly: true}}
	if err := s.InsertSandbox(ctx, second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateVolume(ctx, vol.ID, t0, func(v *sbx.Volume, users []string) error {
		if len(users) != 2 {
			t.Errorf("users: %v", users)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if mounts, err := s.SandboxVolumes(ctx, second.ID); err != nil || len(mounts) != 1 || !mounts[0].ReadOnly || mounts[0].Name != "data" {
		t.Errorf("mounts: %+v, %v", mounts, err)
	}
	// 64 MiB for 16 hours: 64/1024 × 57600 s × 40 nano-credits = 144 micro-credits.
	if st, err := s.SettleVolume(ctx, vol.ID, t0.Add(16*time.Hour)); err != nil || st.Paid != 144 || st.Kind != sbx.StorageVolume {
		t.Errorf("settling a volume: %+v, %v", st, err)
	}
	spend, err := s.StorageSpending(ctx, org.ID, t0, t0.Add(17*time.Hour))
	if err != nil || len(spend) != 2 || spend[0].Total != 144 || spend[1].Total != 144 {
		t.Errorf("storage spending: %+v, %v", spend, err)
	}

	pool := sbx.Pool{TemplateID: "base", OrgID: org.ID, WorkspaceID: ws.ID, ProjectID: p.ID, MinReady: 1, MaxReady: 2, Resources: src.Resources, UpdatedAt: t0}
	if err := s.SetPool(ctx, pool); err != nil {
		t.Fatal(err)
	}
	member := newSandbox(org, ws, p, t0)
	member.Resources.GPU, member.Pool, member.LastSettledAt = nil, "base", t0
	if err := s.InsertSandbox(ctx, member); err != nil {
		t.Fatal(err)
	}
	other, ows, op, err := s.CreateOrg(ctx, "other", t0)
	if err != nil {
		t.Fatal(err)
	}
	out, old, err := s.CheckOut(ctx, "base", src.Resources, nil, t0.Add(time.Minute), func(sb *sbx.Sandbox) []sbx.Event {
		sb.OrgID, sb.WorkspaceID, sb.ProjectID, sb.AccessToken = other.ID, ows.ID, op.ID, "new"
		sb.Metadata = map[string]string{"k": "v"}
		return []sbx.Event{{At: t0, Step: "checked_out"}}
	})
	if err != nil || out.ID != member.ID || old != "tok" {
		t.Fatalf("checkout: %+v %q %v", out, old, err)
	}
	after, err := s.GetSandbox(ctx, other.ID, member.ID)
	if err != nil || after.Pool != "" || after.AccessToken != "new" || after.Metadata["k"] != "v" || after.BilledMicros == 0 {
		t.Fatalf("after a checkout: %+v, %v", after, err)
	}
	if again, _, err := s.CheckOut(ctx, "base", src.Resources, nil, t0, func(*sbx.Sandbox) []sbx.Event { return nil }); err != nil || again.ID != "" {
		t.Errorf("a second checkout: %+v, %v", again, err)
	}
}
