package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// Capabilities: an org's inventory of uploaded bundles, and the bindings
// that install a capability on a runtime. Package capability checks bundles
// and flags; the ledger keeps the rows and what must hold between them: a
// binding to the inventory names a bundle that is there, and a bundle in use
// by a binding is not removed. Both take the bundle's row lock (FOR UPDATE on
// PostgreSQL), so a removal and a binding to the same bundle take turns.

const bundleColumns = `org_id, name, version, description, manifest, sha256, size, created_at`

func scanBundle(row scanner) (sbx.CapabilityBundle, error) {
	var b sbx.CapabilityBundle
	var manifest string
	var created int64
	if err := row.Scan(&b.OrgID, &b.Name, &b.Version, &b.Description, &manifest, &b.SHA256, &b.Size, &created); err != nil {
		return b, err
	}
	b.Manifest, b.CreatedAt = []byte(manifest), time.UnixMicro(created).UTC()
	return b, nil
}

// AddCapabilityBundle puts a version of a capability, with its archive, in
// its org's inventory. A version is uploaded once: the same name and version
// again is a conflict.
func (s *Store) AddCapabilityBundle(ctx context.Context, b sbx.CapabilityBundle, archive []byte, now time.Time) (sbx.CapabilityBundle, error) {
	b.CreatedAt, b.Size = now, int64(len(archive))
	err := s.write(ctx, func(tx db) error {
		_, err := tx.exec(ctx, `INSERT INTO capability_bundles (`+bundleColumns+`, archive) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			b.OrgID, b.Name, b.Version, b.Description, string(b.Manifest), b.SHA256, b.Size, now.UnixMicro(), archive)
		if isUniqueViolation(err) {
			return sbx.Errorf(sbx.EConflict, "capability %s %s is already in the org's inventory; a version is uploaded once: give the new bundle a new version", b.Name, b.Version)
		}
		return err
	})
	return b, err
}

// CapabilityBundles returns a page of an org's inventory, oldest upload first.
func (s *Store) CapabilityBundles(ctx context.Context, orgID string, p Page) ([]sbx.CapabilityBundle, string, error) {
	where, args, err := after(p, "created_at", "name || '@' || version")
	if err != nil {
		return nil, "", err
	}
	out, err := queryBundles(ctx, s.read(ctx), `SELECT `+bundleColumns+` FROM capability_bundles WHERE org_id = ? AND `+where+`
		ORDER BY created_at, name || '@' || version LIMIT ?`, append(append([]any{orgID}, args...), limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(b sbx.CapabilityBundle) (time.Time, string) { return b.CreatedAt, b.Name + "@" + b.Version })
	return out, next, nil
}

// CapabilityVersions returns every version of capability name in an org's
// inventory, oldest upload first; none is not an error.
func (s *Store) CapabilityVersions(ctx context.Context, orgID, name string) ([]sbx.CapabilityBundle, error) {
	return queryBundles(ctx, s.read(ctx), `SELECT `+bundleColumns+` FROM capability_bundles WHERE org_id = ? AND name = ? ORDER BY created_at, version`, orgID, name)
}

func queryBundles(ctx context.Context, q db, query string, args ...any) ([]sbx.CapabilityBundle, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sbx.CapabilityBundle
	for rows.Next() {
		b, err := scanBundle(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// CapabilityArchive returns a version of a capability in an org's inventory
// with its archive.
func (s *Store) CapabilityArchive(ctx context.Context, orgID, name, version string) (sbx.CapabilityBundle, []byte, error) {
	var archive []byte
	var b sbx.CapabilityBundle
	var manifest string
	var created int64
	err := s.read(ctx).row(ctx, `SELECT `+bundleColumns+`, archive FROM capability_bundles WHERE org_id = ? AND name = ? AND version = ?`,
		orgID, name, version).Scan(&b.OrgID, &b.Name, &b.Version, &b.Description, &manifest, &b.SHA256, &b.Size, &created, &archive)
	if errors.Is(err, sql.ErrNoRows) {
		return b, nil, bundleNotFound(name, version)
	}
	b.Manifest, b.CreatedAt = []byte(manifest), time.UnixMicro(created).UTC()
	return b, archive, err
}

func bundleNotFound(name, version string) error {
	return sbx.Errorf(sbx.ENotFound, "capability %s %s is not in the org's inventory", name, version)
}

// lockBundle finds a version in the inventory and locks its row until the
// transaction ends.
func lockBundle(ctx context.Context, tx db, orgID, name, version string) (sbx.CapabilityBundle, error) {
	b, err := scanBundle(tx.row(ctx, `SELECT `+bundleColumns+` FROM capability_bundles WHERE org_id = ? AND name = ? AND version = ?`+tx.forUpdate(),
		orgID, name, version))
	if errors.Is(err, sql.ErrNoRows) {
		return b, bundleNotFound(name, version)
	}
	return b, err
}

// DeleteCapabilityBundle removes a version from an org's inventory, unless a
// binding uses it: that is a conflict naming the runtimes and bindings.
func (s *Store) DeleteCapabilityBundle(ctx context.Context, orgID, name, version string) (sbx.CapabilityBundle, error) {
	var b sbx.CapabilityBundle
	err := s.write(ctx, func(tx db) error {
		var err error
		if b, err = lockBundle(ctx, tx, orgID, name, version); err != nil {
			return err
		}
		users, err := queryBindings(ctx, tx, `SELECT `+bindingColumns+` FROM capability_bindings
			WHERE org_id = ? AND name = ? AND version = ? AND source = 'inventory' ORDER BY created_at, id`, orgID, name, version)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			where := make([]string, len(users))
			for i, u := range users {
				where[i] = fmt.Sprintf("runtime %s (binding %s)", u.RuntimeID, u.ID)
			}
			return sbx.Errorf(sbx.EConflict, "capability %s %s is installed on %s; uninstall it there, or change its version, first",
				name, version, strings.Join(where, ", "))
		}
		_, err = tx.exec(ctx, `DELETE FROM capability_bundles WHERE org_id = ? AND name = ? AND version = ?`, orgID, name, version)
		return err
	})
	return b, err
}

const bindingColumns = `id, org_id, runtime_id, name, version, source, enabled, flags, created_at, updated_at`

func scanBinding(row scanner) (sbx.CapabilityBinding, error) {
	var b sbx.CapabilityBinding
	var source, flags string
	var created, updated int64
	if err := row.Scan(&b.ID, &b.OrgID, &b.RuntimeID, &b.Name, &b.Version, &source, &b.Enabled, &flags, &created, &updated); err != nil {
		return b, err
	}
	b.Source = sbx.CapabilitySource(source)
	b.CreatedAt, b.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return b, json.Unmarshal([]byte(flags), &b.Flags)
}

func queryBindings(ctx context.Context, q db, query string, args ...any) ([]sbx.CapabilityBinding, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sbx.CapabilityBinding
	for rows.Next() {
		b, err := scanBinding(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// CreateCapabilityBinding installs a capability on a runtime of the
// binding's org. A binding to the inventory needs the bundle there; a
// runtime has one binding per capability name.
func (s *Store) CreateCapabilityBinding(ctx context.Context, b sbx.CapabilityBinding, now time.Time) (sbx.CapabilityBinding, error) {
	b.ID, b.CreatedAt, b.UpdatedAt = uuid.NewString(), now, now
	if b.Flags == nil {
		b.Flags = map[string]bool{}
	}
	flags, _ := json.Marshal(b.Flags)
	err := s.write(ctx, func(tx db) error {
		var n int
		if err := tx.row(ctx, `SELECT count(*) FROM runtimes WHERE id = ? AND org_id = ?`, b.RuntimeID, b.OrgID).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return sbx.Errorf(sbx.ENotFound, "runtime %s not found", b.RuntimeID)
		}
		if err := checkSource(ctx, tx, b); err != nil {
			return err
		}
		old, err := scanBinding(tx.row(ctx, `SELECT `+bindingColumns+` FROM capability_bindings WHERE runtime_id = ? AND name = ?`, b.RuntimeID, b.Name))
		if err == nil {
			return sbx.Errorf(sbx.EConflict, "capability %s is already installed on runtime %s (binding %s, version %s from the %s); change it with PATCH or uninstall it first",
				b.Name, b.RuntimeID, old.ID, old.Version, old.Source)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = tx.exec(ctx, `INSERT INTO capability_bindings (`+bindingColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			b.ID, b.OrgID, b.RuntimeID, b.Name, b.Version, string(b.Source), b.Enabled, string(flags), now.UnixMicro(), now.UnixMicro())
		if isUniqueViolation(err) {
			return sbx.Errorf(sbx.EConflict, "capability %s is already installed on runtime %s", b.Name, b.RuntimeID)
		}
		return err
	})
	return b, err
}

// checkSource checks, in tx, that the bundle a binding names can be bound:
// one of the inventory is there (and stays, its row locked, until tx ends).
func checkSource(ctx context.Context, tx db, b sbx.CapabilityBinding) error {
	switch b.Source {
	case sbx.CapabilityInventory:
		_, err := lockBundle(ctx, tx, b.OrgID, b.Name, b.Version)
		return err
	case sbx.CapabilityCatalog:
		return nil
	}
	return sbx.Invalid("source", "source %q must be catalog or inventory", b.Source)
}

// CapabilityBindings returns a page of a runtime's bindings, oldest first.
func (s *Store) CapabilityBindings(ctx context.Context, orgID, runtimeID string, p Page) ([]sbx.CapabilityBinding, string, error) {
	where, args, err := after(p, "created_at", "id")
	if err != nil {
		return nil, "", err
	}
	out, err := queryBindings(ctx, s.read(ctx), `SELECT `+bindingColumns+` FROM capability_bindings WHERE org_id = ? AND runtime_id = ? AND `+where+`
		ORDER BY created_at, id LIMIT ?`, append(append([]any{orgID, runtimeID}, args...), limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(b sbx.CapabilityBinding) (time.Time, string) { return b.CreatedAt, b.ID })
	return out, next, nil
}

// RuntimeCapabilityBindings returns every binding of a runtime, by name.
func (s *Store) RuntimeCapabilityBindings(ctx context.Context, orgID, runtimeID string) ([]sbx.CapabilityBinding, error) {
	return queryBindings(ctx, s.read(ctx), `SELECT `+bindingColumns+` FROM capability_bindings WHERE org_id = ? AND runtime_id = ? ORDER BY name`,
		orgID, runtimeID)
}

// GetCapabilityBinding finds binding id of a runtime.
func (s *Store) GetCapabilityBinding(ctx context.Context, orgID, runtimeID, id string) (sbx.CapabilityBinding, error) {
	return getBinding(ctx, s.read(ctx), orgID, runtimeID, id, false)
}

func getBinding(ctx context.Context, q db, orgID, runtimeID, id string, lock bool) (sbx.CapabilityBinding, error) {
	suffix := q.forUpdateIf(lock)
	b, err := scanBinding(q.row(ctx, `SELECT `+bindingColumns+` FROM capability_bindings WHERE id = ? AND org_id = ? AND runtime_id = ?`+suffix,
		id, orgID, runtimeID))
	if errors.Is(err, sql.ErrNoRows) {
		return b, sbx.Errorf(sbx.ENotFound, "capability binding %s not found on runtime %s", id, runtimeID)
	}
	return b, err
}

// UpdateCapabilityBinding writes a binding's version, source, enabled and
// flags (the binding found by b's ID, org and runtime).
func (s *Store) UpdateCapabilityBinding(ctx context.Context, b sbx.CapabilityBinding, now time.Time) (sbx.CapabilityBinding, error) {
	if b.Flags == nil {
		b.Flags = map[string]bool{}
	}
	flags, _ := json.Marshal(b.Flags)
	var out sbx.CapabilityBinding
	err := s.write(ctx, func(tx db) error {
		cur, err := getBinding(ctx, tx, b.OrgID, b.RuntimeID, b.ID, true)
		if err != nil {
			return err
		}
		if !cur.UpdatedAt.Equal(b.UpdatedAt) {
			return sbx.Errorf(sbx.EConflict, "capability binding %s was changed by another request while this one was made: read it again and retry", b.ID)
		}
		if err := checkSource(ctx, tx, b); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `UPDATE capability_bindings SET version = ?, source = ?, enabled = ?, flags = ?, updated_at = ? WHERE id = ?`,
			b.Version, string(b.Source), b.Enabled, string(flags), now.UnixMicro(), b.ID); err != nil {
			return err
		}
		out, err = getBinding(ctx, tx, b.OrgID, b.RuntimeID, b.ID, false)
		return err
	})
	return out, err
}

// DeleteCapabilityBinding uninstalls a capability from a runtime and
// returns the binding it was.
func (s *Store) DeleteCapabilityBinding(ctx context.Context, orgID, runtimeID, id string) (sbx.CapabilityBinding, error) {
	var b sbx.CapabilityBinding
	err := s.write(ctx, func(tx db) error {
		var err error
		if b, err = getBinding(ctx, tx, orgID, runtimeID, id, true); err != nil {
			return err
		}
		_, err = tx.exec(ctx, `DELETE FROM capability_bindings WHERE id = ?`, id)
		return err
	})
	return b, err
}
