package local

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

func TestParseReserve(t *testing.T) {
	for in, want := range map[string]Reserve{
		"2GiB": {Bytes: 2 << 30}, "500M": {Bytes: 500 << 20}, "1.5G": {Bytes: 3 << 29}, "0": {}, "4096": {Bytes: 4096},
		"5%": {Percent: 5}, "12.5%": {Percent: 12.5},
	} {
		if got, err := ParseReserve(in); err != nil || got != want {
			t.Errorf("ParseReserve(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if got, _ := ParseReserve(want.String()); got != want {
			t.Errorf("%+v does not read back from %q", want, want.String())
		}
	}
	for _, in := range []string{"", "-1G", "2X", "101%", "G", "lots"} {
		if _, err := ParseReserve(in); err == nil {
			t.Errorf("ParseReserve(%q) took it", in)
		}
	}
	if got := (Reserve{Bytes: 1 << 30, Percent: 10}).of(100 << 30); got != 10<<30 {
		t.Errorf("the larger of a size and a share: %d", got)
	}
}

// A create, and the wake of a hibernated sandbox, are refused with a 507
// when the data dir's filesystem would fall below the reserve once every
// live sandbox has written its layer to its cap; a sandbox's cap is its
// own disk size, and what it may still write shrinks as it writes.
func TestDiskReserve(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	spec := func(diskMB int64) sbx.Spec {
		return sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: "tdisk" + strings.ReplaceAll(uuid.NewString(), "-", "")[:8],
			TemplateID: "base", Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 128, DiskMB: diskMB}}
	}
	d, err := p.Disk(ctx)
	if err != nil || d.Total <= 0 || d.Free <= 0 || d.Free > d.Total || d.Committed != 0 || d.Reserve != 0 {
		t.Fatalf("the disk of an empty provider: %+v %v", d, err)
	}

	s := spec(256)
	if err := p.Admit(ctx, s); err != nil {
		t.Fatalf("a small sandbox on this host: %v", err)
	}
	if d, _ := p.Disk(ctx); d.Committed != 256<<20 {
		t.Fatalf("an admitted create holds its share until it is made: %+v", d)
	}
	in, err := p.Create(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	id := in.ProviderSandboxID
	if flags := strings.Join(mustMeta(t, p, id).Flags, " "); !strings.Contains(flags, ",size=256m") {
		t.Fatalf("the layer is not capped at the sandbox's own size: %s", flags)
	}
	p.execIn(t, id, "/bin/sh", "-c", "head -c 33554432 /dev/urandom > /workspace/blob && sync")
	d, _ = p.Disk(ctx)
	if d.Committed > (256-32)<<20 || d.Committed < (256-64)<<20 {
		t.Fatalf("a sandbox that wrote 32 MB of its 256 may still write %d MB", d.Committed>>20)
	}

	p.cfg.DiskReserve = Reserve{Percent: 100} // more than is free: nothing more fits
	err = p.Admit(ctx, spec(64))
	if sbx.ErrorCode(err) != sbx.ENoStorage || !strings.Contains(sbx.ErrorMessage(err),
		"this host has no room on disk to create the sandbox: its writable layer may grow by 64 MB, and of the host's") ||
		!strings.Contains(sbx.ErrorMessage(err), "ask for a smaller disk (diskMB)") || strings.Contains(sbx.ErrorMessage(err), p.cfg.DataDir) {
		t.Fatalf("a create past the reserve: %v", err)
	}
	if err := p.Hibernate(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.Disk(ctx); d.Committed != 0 {
		t.Fatalf("a hibernated sandbox writes nothing: %+v", d)
	}
	err = p.AdmitResume(ctx, in.Handle)
	if sbx.ErrorCode(err) != sbx.ENoStorage || !strings.Contains(sbx.ErrorMessage(err), "no room on disk to wake sandbox "+id+": its writable layer may grow by 256 MB") {
		t.Fatalf("a wake past the reserve: %v", err)
	}

	p.cfg.DiskReserve = Reserve{}
	if err := p.AdmitResume(ctx, in.Handle); err != nil {
		t.Fatalf("a wake with room: %v", err)
	}
	if _, err := p.Resume(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	if got := p.execIn(t, id, "/bin/sh", "-c", "wc -c < /workspace/blob"); strings.TrimSpace(got) != "33554432" {
		t.Fatalf("the layer after the wake holds %q bytes", got)
	}
	if d, _ := p.Disk(ctx); d.Committed <= 0 || d.Committed > 256<<20 {
		t.Fatalf("a woken sandbox counts again, once: %+v", d)
	}
}

func mustMeta(t *testing.T, p *Provider, id string) meta {
	t.Helper()
	m, err := p.readMeta(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
