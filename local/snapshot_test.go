package local

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// A snapshot of a running sandbox leaves it running; each of three
// sandboxes restored from it goes on from the snapshot's count and files,
// independently; a paused sandbox's snapshot leaves it paused, and a
// hibernated one's is taken from its image. Deleting the snapshot leaves
// its restored sandboxes running.
func TestSnapshotRestoresIntoMany(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	p.cfg.Init = counter
	src, h := p.create(t, 256)
	p.execIn(t, src, "/bin/sh", "-c", "echo kept > /workspace/file")
	at := p.count(t, src, 5)

	snap := uuid.NewString()
	info, err := p.Snapshot(ctx, h, snap, true)
	if err != nil {
		t.Fatal(err)
	}
	if info.SizeBytes <= 0 || info.TemplateVersion == "" {
		t.Errorf("snapshot info: %+v", info)
	}
	if later := p.count(t, src, at+5); later <= at {
		t.Fatal("the source stopped counting after its snapshot")
	}
	source := sbx.SnapshotSource{ID: snap, Handle: info.Handle, Memory: true}
	var children []string
	for range 3 {
		spec := p.spec(256)
		spec.Snapshot = &source
		if err := p.Admit(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		children = append(children, spec.ProviderSandboxID)
	}
	for _, c := range children {
		if got := p.execIn(t, c, "cat", "/workspace/file"); got != "kept\n" {
			t.Errorf("file in %s: %q", c, got)
		}
		n := p.count(t, c, at)
		if later := p.count(t, c, n+3); later <= n {
			t.Errorf("%s does not count", c)
		}
	}
	p.execIn(t, children[0], "/bin/sh", "-c", "echo mine > /workspace/file")
	if got := p.execIn(t, children[1], "cat", "/workspace/file"); got != "kept\n" {
		t.Errorf("a child's write reached another: %q", got)
	}
	if got := p.execIn(t, src, "cat", "/workspace/file"); got != "kept\n" {
		t.Errorf("a child's write reached the source: %q", got)
	}

	// Paused: the snapshot leaves it paused.
	if err := p.Pause(ctx, h); err != nil {
		t.Fatal(err)
	}
	paused := uuid.NewString()
	if _, err := p.Snapshot(ctx, h, paused, true); err != nil {
		t.Fatal(err)
	}
	st, err := p.rs.State(ctx, src)
	if err != nil || st.Status != "paused" {
		t.Errorf("after a paused sandbox's snapshot: %+v, %v", st, err)
	}
	// Hibernated: from its image, which its wake then removes.
	if err := p.Hibernate(ctx, h); err != nil {
		t.Fatal(err)
	}
	asleep := uuid.NewString()
	hinfo, err := p.Snapshot(ctx, h, asleep, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resume(ctx, h); err != nil {
		t.Fatal(err)
	}
	spec := p.spec(256)
	spec.Snapshot = &sbx.SnapshotSource{ID: asleep, Handle: hinfo.Handle, Memory: true}
	if _, err := p.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	p.count(t, spec.ProviderSandboxID, at)

	ids, err := p.Snapshots(ctx)
	if err != nil || len(ids) != 3 {
		t.Fatalf("snapshots: %v, %v", ids, err)
	}
	for _, id := range ids {
		if err := p.DeleteSnapshot(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(p.snapshotDir(snap)); !os.IsNotExist(err) {
		t.Errorf("a deleted snapshot's directory: %v", err)
	}
	n := p.count(t, children[2], 0)
	p.count(t, children[2], n+2)
	spec = p.spec(256)
	spec.Snapshot = &source
	if err := p.Admit(ctx, spec); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("admitting a deleted snapshot: %v", err)
	}
}

// A files-only snapshot: a sandbox started from it boots on the source's
// files (written, changed and deleted ones, whatever was under the
// template) with a fresh first process, any number of times; the
// template's own tree is untouched.
func TestFilesOnlySnapshot(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	p.cfg.Init = counter
	src, h := p.create(t, 256)
	p.execIn(t, src, "/bin/sh", "-c", "echo kept > /workspace/file && mkdir -p /opt/new/deep && echo d > /opt/new/deep/f && rm /etc/issue && echo changed > /etc/motd")
	before := p.count(t, src, 20)
	snap := uuid.NewString()
	info, err := p.Snapshot(ctx, h, snap, false)
	if err != nil {
		t.Fatal(err)
	}
	if info.SizeBytes <= 0 || info.SizeBytes > 1<<20 {
		t.Errorf("a files-only snapshot holds %d bytes of its own", info.SizeBytes)
	}
	for range 2 {
		spec := p.spec(256)
		spec.Snapshot = &sbx.SnapshotSource{ID: snap, Handle: info.Handle}
		if _, err := p.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		id := spec.ProviderSandboxID
		if got := p.execIn(t, id, "/bin/sh", "-c", "cat /workspace/file /opt/new/deep/f /etc/motd; test -e /etc/issue && echo issue; true"); got != "kept\nd\nchanged\n" {
			t.Errorf("files in a sandbox of a files-only snapshot: %q", got)
		}
		if n := p.count(t, id, 1); n >= before {
			t.Errorf("the counter went on from %d (at %d): its memory came along", before, n)
		}
	}
	tmpl, err := templates.Current("base")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tmpl.Rootfs(), "etc", "issue")); err != nil {
		t.Errorf("the template lost /etc/issue: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmpl.Rootfs(), "opt", "new")); !os.IsNotExist(err) {
		t.Errorf("the template gained /opt/new: %v", err)
	}
}
