package ledger

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/pricing"
)

const volumeColumns = `id, org_id, workspace_id, project_id, name, provider, size_mb, state, created_at, deleted_at,
	billed_micros, unbilled_nanos, last_settled_at`

// InsertVolume records a new volume, which its org's plan's disk must have
// room for; a live volume of the same name in its project is a 409.
func (s *Store) InsertVolume(ctx context.Context, v sbx.Volume) error {
	return s.write(ctx, func(tx db) error {
		if err := admitStorage(ctx, tx, v.OrgID, v.ID, v.SizeMB, "volume "+v.Name); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO volumes (`+volumeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			v.ID, v.OrgID, v.WorkspaceID, v.ProjectID, v.Name, v.Provider, v.SizeMB, string(v.State), v.CreatedAt.UnixMicro(), micros(v.DeletedAt),
			v.BilledMicros, v.UnbilledNanos, v.CreatedAt.UnixMicro())
		if isUniqueViolation(err) {
			return sbx.Errorf(sbx.EConflict, "a volume named %s already exists in this project", v.Name)
		}
		return err
	})
}

// GetVolume finds a live volume of org by its sbx UUID, or by its name in
// project projectID.
func (s *Store) GetVolume(ctx context.Context, orgID, projectID, ref string) (sbx.Volume, error) {
	q, args := `SELECT `+volumeColumns+` FROM volumes WHERE org_id = ? AND id = ?`, []any{orgID, ref}
	if _, err := uuid.Parse(ref); err != nil {
		q, args = `SELECT `+volumeColumns+` FROM volumes WHERE org_id = ? AND project_id = ? AND name = ? AND state <> 'deleted'`, []any{orgID, projectID, ref}
	}
	v, err := scanVolume(s.read(ctx).row(ctx, q, args...))
	if errors.Is(err, sql.ErrNoRows) || (err == nil && v.State == sbx.VolumeDeleted) {
		return sbx.Volume{}, sbx.Errorf(sbx.ENotFound, "volume %s not found", ref)
	}
	return v, err
}

// ListVolumes returns one page of an org's live volumes, newest first.
func (s *Store) ListVolumes(ctx context.Context, f sbx.VolumeFilter) ([]sbx.Volume, string, error) {
	where, args := []string{"org_id = ?", "state <> 'deleted'"}, []any{f.OrgID}
	if f.ProjectID != "" {
		where, args = append(where, "project_id = ?"), append(args, f.ProjectID)
	}
	if f.MemberID != "" {
		where, args = append(where, inMembersWorkspaces), append(args, f.MemberID)
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, at, at, id)
	}
	limit := limitOf(f.Page)
	rows, err := s.read(ctx).query(ctx, `SELECT `+volumeColumns+` FROM volumes WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	out, err := scanVolumes(rows)
	if err != nil {
		return nil, "", err
	}
	out, next := page(out, f.Page, func(v sbx.Volume) (time.Time, string) { return v.CreatedAt, v.ID })
	return out, next, nil
}

// UpdateVolume changes a live volume with fn, in one transaction with the
// check of its users: fn gets the provider sandbox IDs of the sandboxes
// that mount it and are not final (or have an operation in flight), and
// refuses by returning an error. Its storage is settled up to now first,
// at the size it had.
func (s *Store) UpdateVolume(ctx context.Context, id string, now time.Time, fn func(v *sbx.Volume, users []string) error) (sbx.Volume, error) {
	var v sbx.Volume
	err := s.write(ctx, func(tx db) error {
		var err error
		v, err = scanVolume(tx.row(ctx, `SELECT `+volumeColumns+` FROM volumes WHERE id = ?`+tx.forUpdate(), id))
		if errors.Is(err, sql.ErrNoRows) || (err == nil && v.State == sbx.VolumeDeleted) {
			return sbx.Errorf(sbx.ENotFound, "volume %s not found", id)
		}
		if err != nil {
			return err
		}
		if _, err := s.settleVolumeInTx(ctx, tx, &v, now); err != nil { // at the size it had
			return err
		}
		users, err := volumeUsers(ctx, tx, id, false)
		if err != nil {
			return err
		}
		size := v.SizeMB
		if err := fn(&v, users); err != nil {
			return err
		}
		if v.SizeMB > size {
			if err := admitStorage(ctx, tx, v.OrgID, v.ID, v.SizeMB, "volume "+v.Name); err != nil {
				return err
			}
		}
		_, err = tx.exec(ctx, `UPDATE volumes SET size_mb = ?, state = ?, deleted_at = ?, billed_micros = ?, unbilled_nanos = ?,
			last_settled_at = ? WHERE id = ?`, v.SizeMB, string(v.State), micros(v.DeletedAt), v.BilledMicros, v.UnbilledNanos,
			v.LastSettledAt.UnixMicro(), v.ID)
		return err
	})
	return v, err
}

// volumeUsers lists the provider sandbox IDs of the open sandboxes that
// mount volume id (only read-write: writers).
func volumeUsers(ctx context.Context, tx db, id string, writers bool) ([]string, error) {
	rows, err := tx.query(ctx, `SELECT s.provider_sandbox_id FROM sandbox_volumes sv JOIN sandboxes s ON s.id = sv.sandbox_id
		WHERE sv.volume_id = ? AND (s.state IN ('starting', 'running', 'paused') OR s.intent <> '') AND (NOT ? OR NOT sv.read_only)
		ORDER BY s.created_at`, id, writers)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var sid string
		if err := rows.Scan(&sid); err != nil {
			return nil, err
		}
		out = append(out, sid)
	}
	return out, rows.Err()
}

// insertMounts records a new sandbox's volume mounts in tx: each volume
// live, and one mounted read-write not already so by an open sandbox.
func insertMounts(ctx context.Context, tx db, sb sbx.Sandbox) error {
	for _, m := range sb.Volumes {
		var state string
		err := tx.row(ctx, `SELECT state FROM volumes WHERE id = ? AND org_id = ?`+tx.forUpdate(), m.VolumeID, sb.OrgID).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) || state == string(sbx.VolumeDeleted) {
			return sbx.Errorf(sbx.ENotFound, "volume %s not found", m.Name)
		}
		if err != nil {
			return err
		}
		if state != string(sbx.VolumeReady) {
			return sbx.Errorf(sbx.EConflict, "volume %s is %s; try again once it is ready", m.Name, state)
		}
		if !m.ReadOnly {
			writers, err := volumeUsers(ctx, tx, m.VolumeID, true)
			if err != nil {
				return err
			}
			if len(writers) > 0 {
				return sbx.Errorf(sbx.EConflict, "volume %s is mounted read-write by sandbox %s: one sandbox at a time mounts a volume read-write (mount it readOnly, or end that sandbox)", m.Name, writers[0])
			}
		}
		if _, err := tx.exec(ctx, `INSERT INTO sandbox_volumes (sandbox_id, volume_id, path, read_only) VALUES (?, ?, ?, ?)`,
			sb.ID, m.VolumeID, m.Path, m.ReadOnly); err != nil {
			return err
		}
	}
	return nil
}

// SandboxVolumes lists what a sandbox mounts, in the order it was made with.
func (s *Store) SandboxVolumes(ctx context.Context, sandboxID string) ([]sbx.VolumeMount, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT sv.volume_id, v.name, sv.path, sv.read_only FROM sandbox_volumes sv
		JOIN volumes v ON v.id = sv.volume_id WHERE sv.sandbox_id = ? ORDER BY sv.path`, sandboxID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sbx.VolumeMount
	for rows.Next() {
		var m sbx.VolumeMount
		if err := rows.Scan(&m.VolumeID, &m.Name, &m.Path, &m.ReadOnly); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// LiveVolumes lists a provider's (provider "": every) volumes that are not
// deleted: what reconcile compares with the provider's, and the meter bills.
func (s *Store) LiveVolumes(ctx context.Context, provider string) ([]sbx.Volume, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+volumeColumns+` FROM volumes WHERE (provider = ? OR ? = '') AND state <> 'deleted'`, provider, provider)
	if err != nil {
		return nil, err
	}
	return scanVolumes(rows)
}

func scanVolumes(rows *sql.Rows) ([]sbx.Volume, error) {
	defer rows.Close()
	out := []sbx.Volume{}
	for rows.Next() {
		v, err := scanVolume(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func scanVolume(row scanner) (sbx.Volume, error) {
	var v sbx.Volume
	var state string
	var created, settled int64
	var deleted sql.NullInt64
	err := row.Scan(&v.ID, &v.OrgID, &v.WorkspaceID, &v.ProjectID, &v.Name, &v.Provider, &v.SizeMB, &state, &created, &deleted,
		&v.BilledMicros, &v.UnbilledNanos, &settled)
	v.State, v.CreatedAt, v.DeletedAt = sbx.VolumeState(state), time.UnixMicro(created).UTC(), fromMicros(deleted)
	v.LastSettledAt = time.UnixMicro(settled).UTC()
	return v, err
}

// settleVolumeInTx settles v's storage, at its cap, up to now.
func (s *Store) settleVolumeInTx(ctx context.Context, tx db, v *sbx.Volume, now time.Time) (StorageSettlement, error) {
	h := held{kind: sbx.StorageVolume, rate: pricing.VolumeStorage, id: v.ID, orgID: v.OrgID, projectID: v.ProjectID,
		provider: v.Provider, bytes: v.SizeMB << 20, billed: &v.BilledMicros, unbilled: &v.UnbilledNanos, settled: &v.LastSettledAt}
	return s.settleHeld(ctx, tx, h, now)
}

// SettleVolume bills volume id's storage up to now: the meter's call for
// every live volume.
func (s *Store) SettleVolume(ctx context.Context, id string, now time.Time) (StorageSettlement, error) {
	var st StorageSettlement
	err := s.write(ctx, func(tx db) error {
		v, err := scanVolume(tx.row(ctx, `SELECT `+volumeColumns+` FROM volumes WHERE id = ?`+tx.forUpdate(), id))
		if err != nil || v.State == sbx.VolumeDeleted {
			return err
		}
		if st, err = s.settleVolumeInTx(ctx, tx, &v, now); err != nil || st.To.IsZero() {
			return err
		}
		_, err = tx.exec(ctx, `UPDATE volumes SET billed_micros = ?, unbilled_nanos = ?, last_settled_at = ? WHERE id = ?`,
			v.BilledMicros, v.UnbilledNanos, v.LastSettledAt.UnixMicro(), v.ID)
		return err
	})
	return st, err
}
