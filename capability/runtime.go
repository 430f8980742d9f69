package capability

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
)

// What the API does with capabilities, over the ledger: uploads to an org's
// inventory, and installing, changing and resolving a runtime's bindings.

// Store is what those need of the ledger (*ledger.Store); the package
// imports no adapter.
type Store interface {
	AddCapabilityBundle(ctx context.Context, b sbx.CapabilityBundle, archive []byte, now time.Time) (sbx.CapabilityBundle, error)
	CapabilityVersions(ctx context.Context, orgID, name string) ([]sbx.CapabilityBundle, error)
	CapabilityArchive(ctx context.Context, orgID, name, version string) (sbx.CapabilityBundle, []byte, error)
	CreateCapabilityBinding(ctx context.Context, b sbx.CapabilityBinding, now time.Time) (sbx.CapabilityBinding, error)
	RuntimeCapabilityBindings(ctx context.Context, orgID, runtimeID string) ([]sbx.CapabilityBinding, error)
	GetCapabilityBinding(ctx context.Context, orgID, runtimeID, id string) (sbx.CapabilityBinding, error)
	UpdateCapabilityBinding(ctx context.Context, b sbx.CapabilityBinding, now time.Time) (sbx.CapabilityBinding, error)
	CapabilityBundles(ctx context.Context, orgID string, p sbx.Page) ([]sbx.CapabilityBundle, string, error)
	DeleteCapabilityBundle(ctx context.Context, orgID, name, version string) (sbx.CapabilityBundle, error)
	CapabilityBindings(ctx context.Context, orgID, runtimeID string, p sbx.Page) ([]sbx.CapabilityBinding, string, error)
	DeleteCapabilityBinding(ctx context.Context, orgID, runtimeID, id string) (sbx.CapabilityBinding, error)
}

// An org's inventory is everyone's in the org to read; its owners and
// admins change it (authz). A runtime's bindings are for whoever reaches
// the runtime, which the caller has found for them.

// MayChangeInventory refuses c changing its org's inventory (what names
// the change) unless it is an owner or an admin: asked before an upload's
// body is read, and again by Upload.
func MayChangeInventory(c sbx.Caller, what string) error {
	return authz.Need(c, sbx.RoleAdmin, what)
}

// Inventory is a page of c's org's inventory, oldest upload first.
func Inventory(ctx context.Context, store Store, c sbx.Caller, p sbx.Page) ([]sbx.CapabilityBundle, string, error) {
	return store.CapabilityBundles(ctx, c.Org.ID, p)
}

// Remove takes a version out of c's org's inventory; a version a binding
// uses is a conflict naming it.
func Remove(ctx context.Context, store Store, c sbx.Caller, name, version string) (sbx.CapabilityBundle, error) {
	if err := MayChangeInventory(c, "removing a capability from the inventory"); err != nil {
		return sbx.CapabilityBundle{}, err
	}
	return store.DeleteCapabilityBundle(ctx, c.Org.ID, name, version)
}

// Bindings is a page of runtime rt's bindings.
func Bindings(ctx context.Context, store Store, rt sbx.Runtime, p sbx.Page) ([]sbx.CapabilityBinding, string, error) {
	return store.CapabilityBindings(ctx, rt.OrgID, rt.ID, p)
}

// Uninstall removes binding id from runtime rt.
func Uninstall(ctx context.Context, store Store, rt sbx.Runtime, id string) (sbx.CapabilityBinding, error) {
	return store.DeleteCapabilityBinding(ctx, rt.OrgID, rt.ID, id)
}

// Upload checks a tar.gz bundle and puts it in c's org's inventory.
func Upload(ctx context.Context, store Store, c sbx.Caller, archive []byte, now time.Time) (sbx.CapabilityBundle, error) {
	if err := MayChangeInventory(c, "uploading a capability"); err != nil {
		return sbx.CapabilityBundle{}, err
	}
	orgID := c.Org.ID
	b, err := LoadArchive(archive)
	if err != nil {
		return sbx.CapabilityBundle{}, err
	}
	manifest, err := json.Marshal(b.Manifest)
	if err != nil {
		return sbx.CapabilityBundle{}, err
	}
	sum := sha256.Sum256(archive)
	m := b.Manifest
	return store.AddCapabilityBundle(ctx, sbx.CapabilityBundle{OrgID: orgID, Name: m.Name, Version: m.Version, Description: m.Description,
		Manifest: manifest, SHA256: hex.EncodeToString(sum[:])}, archive, now)
}

// StoredManifest is the manifest of a bundle of the inventory, as recorded
// at its upload.
func StoredManifest(b sbx.CapabilityBundle) (Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b.Manifest, &m); err != nil {
		return m, fmt.Errorf("capability %s %s: its recorded manifest: %w", b.Name, b.Version, err)
	}
	return m, nil
}

// Find looks capability name up at version ("" for the newest) in source:
// the org's inventory, the catalog, or ("") the inventory when it has the
// name and the catalog otherwise. It answers the source and the manifest.
func Find(ctx context.Context, store Store, orgID, name, version string, source sbx.CapabilitySource) (sbx.CapabilitySource, Manifest, error) {
	if err := CheckName(name); err != nil {
		return "", Manifest{}, err
	}
	if version != "" {
		if err := CheckVersion(version); err != nil {
			return "", Manifest{}, err
		}
	}
	if source != "" && !source.Valid() {
		return "", Manifest{}, sbx.Invalid("source", "source %q must be inventory or catalog", source)
	}
	if source != sbx.CapabilityCatalog {
		list, err := store.CapabilityVersions(ctx, orgID, name)
		if err != nil {
			return "", Manifest{}, err
		}
		if len(list) > 0 || source == sbx.CapabilityInventory {
			m, err := fromInventory(name, version, list)
			return sbx.CapabilityInventory, m, err
		}
	}
	b, err := CatalogBundle(name, version)
	if err != nil {
		if source == "" && sbx.ErrorCode(err) == sbx.ENotFound && strings.HasSuffix(sbx.ErrorMessage(err), "is not in the catalog") {
			err = sbx.Errorf(sbx.ENotFound, "capability %s is neither in the org's inventory nor in the catalog (see GET /api/v1/capabilities/catalog)", name)
		}
		return "", Manifest{}, err
	}
	return sbx.CapabilityCatalog, b.Manifest, nil
}

func fromInventory(name, version string, list []sbx.CapabilityBundle) (Manifest, error) {
	if len(list) == 0 {
		return Manifest{}, sbx.Errorf(sbx.ENotFound, "capability %s is not in the org's inventory", name)
	}
	versions := make([]string, len(list))
	for i, b := range list {
		versions[i] = b.Version
	}
	sort.Slice(versions, func(i, j int) bool { return CompareVersions(versions[i], versions[j]) < 0 })
	if version == "" {
		version = Newest(versions)
	}
	for _, b := range list {
		if b.Version == version {
			return StoredManifest(b)
		}
	}
	return Manifest{}, sbx.Errorf(sbx.ENotFound, "capability %s has no version %s in the org's inventory (it has %s)", name, version, strings.Join(versions, ", "))
}

// Install is what installing a capability on a runtime asks for.
type Install struct {
	Name    string
	Version string               // "": the newest
	Source  sbx.CapabilitySource // "": the inventory when it has the name, else the catalog
	Flags   map[string]bool
	Enabled bool
}

// InstallOn binds a capability to a runtime of an org.
func InstallOn(ctx context.Context, store Store, orgID, runtimeID string, in Install, now time.Time) (sbx.CapabilityBinding, error) {
	source, m, err := Find(ctx, store, orgID, in.Name, in.Version, in.Source)
	if err != nil {
		return sbx.CapabilityBinding{}, err
	}
	if err := m.CheckFlags("flags", in.Flags); err != nil {
		return sbx.CapabilityBinding{}, err
	}
	return store.CreateCapabilityBinding(ctx, sbx.CapabilityBinding{OrgID: orgID, RuntimeID: runtimeID, Name: m.Name, Version: m.Version,
		Source: source, Enabled: in.Enabled, Flags: in.Flags}, now)
}

// Change is what changing a binding asks for; nil fields stay.
type Change struct {
	Enabled *bool
	Flags   map[string]bool // replaces those set on the binding
	Version *string         // from the binding's source
}

// ChangeBinding changes a binding of a runtime of an org. The flags it ends
// with must all be declared by the version it ends with.
func ChangeBinding(ctx context.Context, store Store, orgID, runtimeID, id string, ch Change, now time.Time) (sbx.CapabilityBinding, error) {
	b, err := store.GetCapabilityBinding(ctx, orgID, runtimeID, id)
	if err != nil {
		return b, err
	}
	if ch.Enabled != nil {
		b.Enabled = *ch.Enabled
	}
	if ch.Version != nil {
		if *ch.Version == "" {
			return b, sbx.Invalid("version", "version must not be empty: name the version to change to")
		}
		b.Version = *ch.Version
	}
	if ch.Flags != nil {
		b.Flags = ch.Flags
	}
	_, m, err := Find(ctx, store, orgID, b.Name, b.Version, b.Source)
	if err != nil {
		return b, err
	}
	if err := m.CheckFlags("flags", b.Flags); err != nil {
		return b, err
	}
	return store.UpdateCapabilityBinding(ctx, b, now)
}

// ResolveRuntime loads a runtime's bindings and the bundles of the enabled
// ones (the inventory's archives from the ledger, checked against their
// recorded SHA-256; the catalog's from the binary) and resolves them.
func ResolveRuntime(ctx context.Context, store Store, orgID, runtimeID string) (Resolved, error) {
	bindings, err := store.RuntimeCapabilityBindings(ctx, orgID, runtimeID)
	if err != nil {
		return Resolved{}, err
	}
	items := make([]Item, 0, len(bindings))
	for _, b := range bindings {
		it := Item{Binding: b}
		if b.Enabled {
			if it.Bundle, err = load(ctx, store, b); err != nil {
				return Resolved{}, err
			}
		}
		items = append(items, it)
	}
	return Resolve(items), nil
}

// load is the bundle a binding names.
func load(ctx context.Context, store Store, b sbx.CapabilityBinding) (*Bundle, error) {
	if b.Source == sbx.CapabilityCatalog {
		bundle, err := CatalogBundle(b.Name, b.Version)
		if sbx.ErrorCode(err) == sbx.ENotFound {
			err = sbx.Errorf(sbx.EConflict, "binding %s: %s; change its version or uninstall it", b.ID, sbx.ErrorMessage(err))
		}
		return bundle, err
	}
	rec, archive, err := store.CapabilityArchive(ctx, b.OrgID, b.Name, b.Version)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(archive); hex.EncodeToString(sum[:]) != rec.SHA256 {
		return nil, fmt.Errorf("capability %s %s: the archive's SHA-256 is not the one recorded at upload", b.Name, b.Version)
	}
	bundle, err := LoadArchive(archive)
	if err != nil {
		return nil, fmt.Errorf("capability %s %s: its archive no longer loads: %v", b.Name, b.Version, err)
	}
	return bundle, nil
}
