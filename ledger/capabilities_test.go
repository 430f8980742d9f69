package ledger_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

func TestCapabilityInventory(t *testing.T) { dialects(t, capabilityInventory) }

func capabilityInventory(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, _, p, _ := s.CreateOrg(ctx, "acme", t0)
	other, _, _, _ := s.CreateOrg(ctx, "other", t0)
	archive := bytes.Repeat([]byte{0x1f, 0x8b, 0, 0xff}, 1000) // any bytes, NULs and all
	bundle := func(version string) sbx.CapabilityBundle {
		return sbx.CapabilityBundle{OrgID: org.ID, Name: "tools", Version: version, Description: "Tools.",
			Manifest: []byte(`{"name":"tools","version":"` + version + `"}`), SHA256: "abc"}
	}
	for i, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc.1"} {
		got, err := s.AddCapabilityBundle(ctx, bundle(v), archive, t0.Add(time.Duration(i)*time.Second))
		if err != nil || got.Size != int64(len(archive)) || !got.CreatedAt.Equal(t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("add %s: %+v %v", v, got, err)
		}
	}
	_, err := s.AddCapabilityBundle(ctx, bundle("1.0.0"), archive, t0)
	wantCode(t, err, sbx.EConflict, "capability tools 1.0.0 is already in the org's inventory; a version is uploaded once")
	if _, err := s.AddCapabilityBundle(ctx, sbx.CapabilityBundle{OrgID: other.ID, Name: "tools", Version: "1.0.0", Manifest: []byte("{}")}, []byte("y"), t0); err != nil {
		t.Fatalf("the same name and version in another org: %v", err)
	}

	var seen []string
	cursor := ""
	for {
		list, next, err := s.CapabilityBundles(ctx, org.ID, ledger.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range list {
			seen = append(seen, b.Version)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if strings.Join(seen, ",") != "1.0.0,1.1.0,2.0.0-rc.1" {
		t.Fatalf("inventory by page: %v", seen)
	}
	versions, err := s.CapabilityVersions(ctx, org.ID, "tools")
	if err != nil || len(versions) != 3 || string(versions[1].Manifest) != `{"name":"tools","version":"1.1.0"}` || versions[1].Description != "Tools." {
		t.Fatalf("versions: %+v %v", versions, err)
	}
	if none, err := s.CapabilityVersions(ctx, org.ID, "nope"); err != nil || len(none) != 0 {
		t.Fatalf("versions of an unknown name: %v %v", none, err)
	}
	rec, data, err := s.CapabilityArchive(ctx, org.ID, "tools", "1.1.0")
	if err != nil || !bytes.Equal(data, archive) || rec.SHA256 != "abc" {
		t.Fatalf("archive: %+v %d bytes %v", rec, len(data), err)
	}
	_, _, err = s.CapabilityArchive(ctx, other.ID, "tools", "1.1.0")
	wantCode(t, err, sbx.ENotFound, "capability tools 1.1.0 is not in the org's inventory")

	// A bound version is not removed; the binding's runtime and ID are named.
	rt, _ := s.Runtime(ctx, p.ID)
	b, err := s.CreateCapabilityBinding(ctx, sbx.CapabilityBinding{OrgID: org.ID, RuntimeID: rt.ID, Name: "tools", Version: "1.1.0",
		Source: sbx.CapabilityInventory, Enabled: true}, t0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.DeleteCapabilityBundle(ctx, org.ID, "tools", "1.1.0")
	wantCode(t, err, sbx.EConflict, "capability tools 1.1.0 is installed on runtime "+rt.ID+" (binding "+b.ID+"); uninstall it there")
	if gone, err := s.DeleteCapabilityBundle(ctx, org.ID, "tools", "1.0.0"); err != nil || gone.Version != "1.0.0" {
		t.Fatalf("delete an unbound version: %+v %v", gone, err)
	}
	_, err = s.DeleteCapabilityBundle(ctx, org.ID, "tools", "1.0.0")
	wantCode(t, err, sbx.ENotFound, "capability tools 1.0.0 is not in the org's inventory")
	// Nor can a binding name a version that is gone.
	_, err = s.UpdateCapabilityBinding(ctx, sbx.CapabilityBinding{ID: b.ID, OrgID: org.ID, RuntimeID: rt.ID, Name: "tools", Version: "1.0.0",
		Source: sbx.CapabilityInventory, Enabled: true, UpdatedAt: b.UpdatedAt}, t0)
	wantCode(t, err, sbx.ENotFound, "capability tools 1.0.0 is not in the org's inventory")
	// A change made from a read that another change has overtaken is refused,
	// not applied over it.
	first := b
	first.Enabled = false
	if _, err := s.UpdateCapabilityBinding(ctx, first, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	second := b
	second.Flags = map[string]bool{"x": true}
	_, err = s.UpdateCapabilityBinding(ctx, second, t0.Add(2*time.Second))
	wantCode(t, err, sbx.EConflict, "was changed by another request while this one was made")
	if _, err := s.DeleteCapabilityBinding(ctx, org.ID, rt.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteCapabilityBundle(ctx, org.ID, "tools", "1.1.0"); err != nil {
		t.Fatalf("delete once unbound: %v", err)
	}
}

func TestCapabilityBindings(t *testing.T) { dialects(t, capabilityBindings) }

func capabilityBindings(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	_, _, op, _ := s.CreateOrg(ctx, "other", t0)
	rt, _ := s.Runtime(ctx, p.ID)
	ort, _ := s.Runtime(ctx, op.ID)
	s.AddCapabilityBundle(ctx, sbx.CapabilityBundle{OrgID: org.ID, Name: "mine", Version: "0.1.0", Manifest: []byte("{}")}, []byte("x"), t0)

	git, err := s.CreateCapabilityBinding(ctx, sbx.CapabilityBinding{OrgID: org.ID, RuntimeID: rt.ID, Name: "git-toolkit", Version: "1.0.0",
		Source: sbx.CapabilityCatalog, Enabled: true, Flags: map[string]bool{"identity": true}}, t0)
	if err != nil || git.ID == "" || !git.Flags["identity"] || !git.CreatedAt.Equal(t0) {
		t.Fatalf("create: %+v %v", git, err)
	}
	mine, err := s.CreateCapabilityBinding(ctx, sbx.CapabilityBinding{OrgID: org.ID, RuntimeID: rt.ID, Name: "mine", Version: "0.1.0",
		Source: sbx.CapabilityInventory}, t0.Add(time.Second))
	if err != nil || mine.Enabled || mine.Flags == nil {
		t.Fatalf("create a disabled one: %+v %v", mine, err)
	}
	_, err = s.CreateCapabilityBinding(ctx, sbx.CapabilityBinding{OrgID: org.ID, RuntimeID: rt.ID, Name: "git-toolkit", Version: "1.0.0",
		Source: sbx.CapabilityCatalog}, t0)
	wantCode(t, err, sbx.EConflict, "capability git-toolkit is already installed on runtime "+rt.ID+" (binding "+git.ID+", version 1.0.0 from the catalog)")
	_, err = s.CreateCapabilityBinding(ctx, sbx.CapabilityBinding{OrgID: org.ID, RuntimeID: rt.ID, Name: "absent", Version: "1.0.0",
		Source: sbx.CapabilityInventory}, t0)
	wantCode(t, err, sbx.ENotFound, "capability absent 1.0.0 is not in the org's inventory")
	_, err = s.CreateCapabilityBinding(ctx, sbx.CapabilityBinding{OrgID: org.ID, RuntimeID: ort.ID, Name: "git-toolkit", Version: "1.0.0",
		Source: sbx.CapabilityCatalog}, t0)
	wantCode(t, err, sbx.ENotFound, "runtime "+ort.ID+" not found")
	_, err = s.CreateCapabilityBinding(ctx, sbx.CapabilityBinding{OrgID: org.ID, RuntimeID: rt.ID, Name: "x", Version: "1.0.0", Source: "web"}, t0)
	wantCode(t, err, sbx.EInvalid, `source "web" must be catalog or inventory`)

	list, next, err := s.CapabilityBindings(ctx, org.ID, rt.ID, ledger.Page{Limit: 1})
	if err != nil || len(list) != 1 || list[0].ID != git.ID || next == "" {
		t.Fatalf("first page: %+v %q %v", list, next, err)
	}
	list, next, err = s.CapabilityBindings(ctx, org.ID, rt.ID, ledger.Page{Limit: 1, Cursor: next})
	if err != nil || len(list) != 1 || list[0].ID != mine.ID || next != "" {
		t.Fatalf("second page: %+v %q %v", list, next, err)
	}
	all, err := s.RuntimeCapabilityBindings(ctx, org.ID, rt.ID)
	if err != nil || len(all) != 2 || all[0].Name != "git-toolkit" || all[1].Name != "mine" {
		t.Fatalf("all by name: %+v %v", all, err)
	}
	if none, err := s.RuntimeCapabilityBindings(ctx, org.ID, ort.ID); err != nil || len(none) != 0 {
		t.Fatalf("another org's runtime through this org: %+v %v", none, err)
	}

	mine.Enabled, mine.Flags = true, map[string]bool{"fast": false}
	got, err := s.UpdateCapabilityBinding(ctx, mine, t0.Add(time.Minute))
	if err != nil || !got.Enabled || len(got.Flags) != 1 || got.Flags["fast"] || !got.UpdatedAt.Equal(t0.Add(time.Minute)) || !got.CreatedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("update: %+v %v", got, err)
	}
	if again, err := s.GetCapabilityBinding(ctx, org.ID, rt.ID, mine.ID); err != nil || again.Version != "0.1.0" || !again.Enabled {
		t.Fatalf("get: %+v %v", again, err)
	}
	_, err = s.GetCapabilityBinding(ctx, org.ID, ort.ID, mine.ID)
	wantCode(t, err, sbx.ENotFound, "capability binding "+mine.ID+" not found on runtime "+ort.ID)
	_, err = s.UpdateCapabilityBinding(ctx, sbx.CapabilityBinding{ID: "nope", OrgID: org.ID, RuntimeID: rt.ID, Source: sbx.CapabilityCatalog}, t0)
	wantCode(t, err, sbx.ENotFound, "capability binding nope not found")

	// Bindings hang off the runtime: a sandbox that comes and goes leaves them.
	sb := newSandbox(org, ws, p, t0)
	sb.Kind = sbx.KindRuntime
	if err := s.InsertSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.RuntimeCapabilityBindings(ctx, org.ID, rt.ID); len(all) != 2 {
		t.Fatalf("after a sandbox: %+v", all)
	}

	gone, err := s.DeleteCapabilityBinding(ctx, org.ID, rt.ID, git.ID)
	if err != nil || gone.Name != "git-toolkit" {
		t.Fatalf("delete: %+v %v", gone, err)
	}
	_, err = s.DeleteCapabilityBinding(ctx, org.ID, rt.ID, git.ID)
	wantCode(t, err, sbx.ENotFound, "not found")
	if _, err := s.CreateCapabilityBinding(ctx, sbx.CapabilityBinding{OrgID: org.ID, RuntimeID: rt.ID, Name: "git-toolkit", Version: "1.0.0",
		Source: sbx.CapabilityCatalog}, t0); err != nil {
		t.Fatalf("install again after uninstall: %v", err)
	}
}
