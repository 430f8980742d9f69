package local

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// A volume holds its cap (ENOSPC inside), keeps what one sandbox wrote for
// the next (read-only there), grows unmounted, survives a provider's
// restart, and goes with its data when deleted; a mount point the
// template lacks is refused before anything is made.
func TestVolumes(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	vol := uuid.NewString()
	if err := p.CreateVolume(ctx, vol, 64); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.DeleteVolume(context.Background(), vol) })
	spec := p.spec(256)
	spec.Volumes = []sbx.VolumeMount{{VolumeID: vol, Name: "data", Path: "/mnt"}}
	if _, err := p.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	writer := spec.ProviderSandboxID
	p.execIn(t, writer, "/bin/sh", "-c", "echo kept > /mnt/file")
	out, err := p.rs.Run(ctx, nil, "exec", writer, "/bin/sh", "-c", "dd if=/dev/zero of=/mnt/big bs=1M count=100 2>&1; echo exit=$?")
	if err != nil || !strings.Contains(string(out), "No space left on device") || !strings.Contains(string(out), "exit=1") {
		t.Errorf("writing past the cap: %v %s", err, out)
	}
	p.execIn(t, writer, "rm", "/mnt/big")

	root, err := p.VolumeRoot(ctx, vol)
	if err != nil {
		t.Fatal(err)
	}
	data, err := root.ReadFile("file")
	root.Close()
	if err != nil || string(data) != "kept\n" {
		t.Errorf("the volume's file from the host: %q, %v", data, err)
	}

	reader := p.spec(256)
	reader.Volumes = []sbx.VolumeMount{{VolumeID: vol, Name: "data", Path: "/srv", ReadOnly: true}}
	if _, err := p.Create(ctx, reader); err != nil {
		t.Fatal(err)
	}
	if got := p.execIn(t, reader.ProviderSandboxID, "cat", "/srv/file"); got != "kept\n" {
		t.Errorf("the next sandbox reads %q", got)
	}
	if out, err := p.rs.Run(ctx, nil, "exec", reader.ProviderSandboxID, "/bin/sh", "-c", "echo x > /srv/other"); err == nil {
		t.Errorf("a read-only mount took a write: %s", out)
	}

	for _, in := range []string{writer, reader.ProviderSandboxID} {
		if err := p.Kill(ctx, sbx.IDHandle(in)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.ResizeVolume(ctx, vol, 160); err != nil {
		t.Fatal(err)
	}
	again := p.spec(256)
	again.Volumes = spec.Volumes
	if _, err := p.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	p.execIn(t, again.ProviderSandboxID, "/bin/sh", "-c", "dd if=/dev/zero of=/mnt/big bs=1M count=100 && rm /mnt/big && cat /mnt/file")

	// A restart of the provider finds the volume as it was.
	p2, err := New(p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := p2.Volumes(ctx); len(ids) != 1 || ids[0] != vol {
		t.Errorf("volumes after a restart: %v", ids)
	}

	if err := p.CheckMount(ctx, "base", "/no/such/dir"); sbx.ErrorCode(err) != sbx.EInvalid || !strings.Contains(err.Error(), "/no/such/dir") {
		t.Errorf("a mount point the template lacks: %v", err)
	}
	if err := p.CheckMount(ctx, "base", "/proc/x"); sbx.ErrorCode(err) != sbx.EInvalid {
		t.Errorf("a mount under /proc: %v", err)
	}
	if err := p.Kill(ctx, sbx.IDHandle(again.ProviderSandboxID)); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteVolume(ctx, vol); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.volumeImage(vol)); !os.IsNotExist(err) {
		t.Errorf("the image outlived its volume: %v", err)
	}
}

// runc mounts volumes as runsc does, and snapshots nothing: its sandboxes
// cannot be checkpointed.
func TestRuncVolumesNoSnapshots(t *testing.T) {
	p := newEngineProvider(t, EngineRunc)
	ctx := context.Background()
	vol := uuid.NewString()
	if err := p.CreateVolume(ctx, vol, 64); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.DeleteVolume(context.Background(), vol) })
	spec := p.spec(256)
	spec.Volumes = []sbx.VolumeMount{{VolumeID: vol, Name: "data", Path: "/mnt"}}
	in, err := p.Create(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	p.execIn(t, spec.ProviderSandboxID, "/bin/sh", "-c", "echo runc > /mnt/f")
	if caps := p.Capabilities(); caps.Snapshots || caps.Fork || !caps.Volumes {
		t.Errorf("runc's capabilities: %+v", caps)
	}
	if _, err := p.Snapshot(ctx, in.Handle, uuid.NewString(), true); err == nil {
		t.Error("runc took a snapshot")
	}
	if err := p.Kill(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	root, err := p.VolumeRoot(ctx, vol)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if data, err := root.ReadFile("f"); err != nil || string(data) != "runc\n" {
		t.Errorf("runc's write: %q %v", data, err)
	}
}
