package capability_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/capability"
	"github.com/sbxdev/sbx/ledger"
)

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// demoArchive is demo's bundle at version, as a tar.gz.
func demoArchive(t *testing.T, version string) []byte {
	t.Helper()
	var entries []entry
	for _, e := range demoFiles() {
		if e.name == "capability.yaml" {
			e.body = strings.Replace(e.body, "version: 1.2.3", "version: "+version, 1)
		}
		entries = append(entries, e)
	}
	return tarball(t, entries...)
}

// Uploads, installs from the inventory and the catalog, changes and
// resolution, over a real ledger.
func TestInstallAndResolve(t *testing.T) {
	ctx := context.Background()
	store, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "l.db"), bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	org, _, p, _ := store.CreateOrg(ctx, "acme", t0)
	rt, _ := store.Runtime(ctx, p.ID)

	for _, v := range []string{"1.2.3", "1.10.0", "2.0.0-beta.1"} {
		b, err := capability.Upload(ctx, store, sbx.Caller{Org: org, Role: sbx.RoleOwner}, demoArchive(t, v), t0)
		if err != nil || b.Name != "demo" || b.Version != v || len(b.SHA256) != 64 || b.Description != "A demo capability." {
			t.Fatalf("upload %s: %+v %v", v, b, err)
		}
	}
	_, err = capability.Upload(ctx, store, sbx.Caller{Org: org, Role: sbx.RoleOwner}, []byte("not gzip"), t0)
	wantErr(t, err, sbx.EInvalid, "the archive is not gzip-compressed")
	_, err = capability.Upload(ctx, store, sbx.Caller{Org: org, Role: sbx.RoleOwner}, demoArchive(t, "1.2.3"), t0)
	wantErr(t, err, sbx.EConflict, "capability demo 1.2.3 is already in the org's inventory")

	source, m, err := capability.Find(ctx, store, org.ID, "demo", "", "")
	if err != nil || source != sbx.CapabilityInventory || m.Version != "1.10.0" || len(m.Tools) != 2 {
		t.Fatalf("newest of the inventory: %s %+v %v", source, m, err)
	}
	if source, m, err = capability.Find(ctx, store, org.ID, "git-toolkit", "", ""); err != nil || source != sbx.CapabilityCatalog || m.Version != "1.0.0" {
		t.Fatalf("from the catalog: %s %+v %v", source, m, err)
	}
	for _, c := range []struct {
		name, version string
		source        sbx.CapabilitySource
		code          sbx.Code
		want          string
	}{
		{"nope", "", "", sbx.ENotFound, "capability nope is neither in the org's inventory nor in the catalog"},
		{"demo", "9.0.0", "", sbx.ENotFound, "capability demo has no version 9.0.0 in the org's inventory (it has 1.2.3, 1.10.0, 2.0.0-beta.1)"},
		{"demo", "", sbx.CapabilityCatalog, sbx.ENotFound, "capability demo is not in the catalog"},
		{"git-toolkit", "", sbx.CapabilityInventory, sbx.ENotFound, "capability git-toolkit is not in the org's inventory"},
		{"Demo", "", "", sbx.EInvalid, `name "Demo" must be`},
		{"demo", "1.0", "", sbx.EInvalid, `version "1.0" must be a semantic version`},
		{"demo", "", "web", sbx.EInvalid, `source "web" must be inventory or catalog`},
	} {
		_, _, err := capability.Find(ctx, store, org.ID, c.name, c.version, c.source)
		wantErr(t, err, c.code, c.want)
	}

	demo, err := capability.InstallOn(ctx, store, org.ID, rt.ID, capability.Install{Name: "demo", Version: "1.2.3", Enabled: true}, t0)
	if err != nil || demo.Source != sbx.CapabilityInventory || demo.Version != "1.2.3" || !demo.Enabled {
		t.Fatalf("install demo: %+v %v", demo, err)
	}
	git, err := capability.InstallOn(ctx, store, org.ID, rt.ID, capability.Install{Name: "git-toolkit", Flags: map[string]bool{"identity": true}}, t0)
	if err != nil || git.Source != sbx.CapabilityCatalog || git.Enabled || !git.Flags["identity"] {
		t.Fatalf("install git-toolkit, disabled: %+v %v", git, err)
	}
	_, err = capability.InstallOn(ctx, store, org.ID, rt.ID, capability.Install{Name: "http-toolkit", Flags: map[string]bool{"turbo": true}}, t0)
	wantErr(t, err, sbx.EInvalid, `capability http-toolkit 1.0.0 has no flag "turbo" (its flags: mcp)`)
	_, err = capability.InstallOn(ctx, store, org.ID, rt.ID, capability.Install{Name: "demo"}, t0)
	wantErr(t, err, sbx.EConflict, "capability demo is already installed on runtime")

	r, err := capability.ResolveRuntime(ctx, store, org.ID, rt.ID)
	if err != nil || len(r.Capabilities) != 1 || r.Capabilities[0].Name != "demo" || r.Bundles["demo"] == nil || len(r.Tools) != 1 {
		t.Fatalf("resolved, git-toolkit disabled: %+v %v", r.ResolvedCapabilities, err)
	}

	yes, v110 := true, "1.10.0"
	if git, err = capability.ChangeBinding(ctx, store, org.ID, rt.ID, git.ID, capability.Change{Enabled: &yes}, t0); err != nil || !git.Enabled || !git.Flags["identity"] {
		t.Fatalf("enable: %+v %v", git, err)
	}
	demo, err = capability.ChangeBinding(ctx, store, org.ID, rt.ID, demo.ID, capability.Change{Version: &v110, Flags: map[string]bool{"extra": true}}, t0)
	if err != nil || demo.Version != "1.10.0" || !demo.Flags["extra"] {
		t.Fatalf("version and flags: %+v %v", demo, err)
	}
	_, err = capability.ChangeBinding(ctx, store, org.ID, rt.ID, demo.ID, capability.Change{Flags: map[string]bool{"nope": true}}, t0)
	wantErr(t, err, sbx.EInvalid, `capability demo 1.10.0 has no flag "nope"`)
	bad := "3.0.0"
	_, err = capability.ChangeBinding(ctx, store, org.ID, rt.ID, demo.ID, capability.Change{Version: &bad}, t0)
	wantErr(t, err, sbx.ENotFound, "capability demo has no version 3.0.0 in the org's inventory")
	_, err = capability.ChangeBinding(ctx, store, org.ID, rt.ID, "nope", capability.Change{Enabled: &yes}, t0)
	wantErr(t, err, sbx.ENotFound, "capability binding nope not found")

	r, err = capability.ResolveRuntime(ctx, store, org.ID, rt.ID)
	if err != nil || len(r.Capabilities) != 2 || r.Capabilities[0].Version != "1.10.0" || len(r.Tools) != 3 || !r.Capabilities[1].Flags["identity"] ||
		len(r.Dependencies) != 3 || r.Dependencies[2].Name != "git-identity" {
		t.Fatalf("resolved: %+v %v", r.ResolvedCapabilities, err)
	}
}

func wantErr(t *testing.T, err error, code sbx.Code, contains string) {
	t.Helper()
	if sbx.ErrorCode(err) != code || !strings.Contains(sbx.ErrorMessage(err), contains) {
		t.Fatalf("got %v (%s), want %s containing %q", err, sbx.ErrorCode(err), code, contains)
	}
}
