package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/pricing"
)

const snapshotColumns = `id, org_id, workspace_id, project_id, source_sandbox_id, provider, template_id, template_version,
	name, metadata, memory, purpose, state, size_bytes, paused_us, milli_cpu, memory_mb, disk_mb, env_var_names, handle,
	access_token, diagnostic, created_at, ready_at, deleted_at, billed_micros, unbilled_nanos, last_settled_at`

// snapshotTokenContext binds a snapshot's sealed token to the snapshot.
func snapshotTokenContext(id, orgID string) string {
	return "snapshot access token\x00" + id + "\x00" + orgID
}

// InsertSnapshot records a new snapshot, creating, unless its org's plan's
// disk is full (its size is known once taken, then counted).
func (s *Store) InsertSnapshot(ctx context.Context, sn sbx.Snapshot) error {
	meta, _ := json.Marshal(nonNilMap(sn.Metadata))
	env, _ := json.Marshal(nonNil(sn.EnvVarNames))
	handle, err := encodeHandle(sn.Handle)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx db) error {
		if err := admitStorage(ctx, tx, sn.OrgID, sn.ID, 0, "a snapshot"); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO snapshots (`+snapshotColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sn.ID, sn.OrgID, sn.WorkspaceID, sn.ProjectID, sn.SourceSandboxID, sn.Provider, sn.TemplateID, sn.TemplateVersion,
			sn.Name, string(meta), sn.Memory, string(sn.Purpose), string(sn.State), sn.SizeBytes, sn.Paused.Microseconds(),
			sn.Resources.MilliCPU, sn.Resources.MemoryMB, sn.Resources.DiskMB, string(env), handle,
			s.seal.Seal(sn.AccessToken, snapshotTokenContext(sn.ID, sn.OrgID)), sn.Diagnostic, sn.CreatedAt.UnixMicro(),
			micros(sn.ReadyAt), micros(sn.DeletedAt), sn.BilledMicros, sn.UnbilledNanos, sn.CreatedAt.UnixMicro())
		if err != nil {
			return err
		}
		return appendOrgEvent(ctx, tx, snapshotEvent(sn, sn.CreatedAt))
	})
}

// GetSnapshot finds a snapshot of org (orgID "": of any) by its sbx UUID.
func (s *Store) GetSnapshot(ctx context.Context, orgID, id string) (sbx.Snapshot, error) {
	return s.getSnapshot(ctx, s.read(ctx), orgID, id, false)
}

func (s *Store) getSnapshot(ctx context.Context, q db, orgID, id string, lock bool) (sbx.Snapshot, error) {
	sn, err := s.scanSnapshot(q.row(ctx, `SELECT `+snapshotColumns+` FROM snapshots WHERE id = ? AND (org_id = ? OR ? = '')`+q.forUpdateIf(lock), id, orgID, orgID))
	if errors.Is(err, sql.ErrNoRows) {
		return sn, sbx.Errorf(sbx.ENotFound, "snapshot %s not found", id)
	}
	return sn, err
}

// UpdateSnapshot loads snapshot id, lets fn change it and writes it, in one
// transaction: the snapshots' compare-and-set. A change out of the states
// that hold storage settles its storage first, up to now.
func (s *Store) UpdateSnapshot(ctx context.Context, id string, now time.Time, fn func(*sbx.Snapshot) error) (sbx.Snapshot, error) {
	var sn sbx.Snapshot
	err := s.write(ctx, func(tx db) error {
		var err error
		if sn, err = s.getSnapshot(ctx, tx, "", id, true); err != nil {
			return err
		}
		before := sn
		if err := fn(&sn); err != nil {
			return err
		}
		if sn.State != before.State {
			if _, err := s.settleSnapshotInTx(ctx, tx, &before, now); err != nil {
				return err
			}
			sn.BilledMicros, sn.UnbilledNanos, sn.LastSettledAt = before.BilledMicros, before.UnbilledNanos, before.LastSettledAt
		}
		handle, err := encodeHandle(sn.Handle)
		if err != nil {
			return err
		}
		_, err = tx.exec(ctx, `UPDATE snapshots SET template_version = ?, state = ?, size_bytes = ?, paused_us = ?, handle = ?,
			diagnostic = ?, ready_at = ?, deleted_at = ?, billed_micros = ?, unbilled_nanos = ?, last_settled_at = ? WHERE id = ?`,
			sn.TemplateVersion, string(sn.State), sn.SizeBytes, sn.Paused.Microseconds(), handle, sn.Diagnostic,
			micros(sn.ReadyAt), micros(sn.DeletedAt), sn.BilledMicros, sn.UnbilledNanos, sn.LastSettledAt.UnixMicro(), sn.ID)
		if err != nil || sn.State == before.State {
			return err
		}
		return appendOrgEvent(ctx, tx, snapshotEvent(sn, now))
	})
	return sn, err
}

// SnapshotFilter picks snapshots.
type SnapshotFilter = sbx.SnapshotFilter

// ListSnapshots returns one page of an org's user snapshots that are not
// deleted, newest first, and the next page's cursor ("" on the last).
func (s *Store) ListSnapshots(ctx context.Context, f SnapshotFilter) ([]sbx.Snapshot, string, error) {
	where, args := []string{"org_id = ?", "purpose = ''", "state <> 'deleted'"}, []any{f.OrgID}
	if f.ProjectID != "" {
		where, args = append(where, "project_id = ?"), append(args, f.ProjectID)
	}
	if f.MemberID != "" {
		where, args = append(where, inMembersWorkspaces), append(args, f.MemberID)
	}
	if f.SourceSandboxID != "" {
		where, args = append(where, "source_sandbox_id = ?"), append(args, f.SourceSandboxID)
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
	args = append(args, limit+1)
	rows, err := s.read(ctx).query(ctx, `SELECT `+snapshotColumns+` FROM snapshots WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, "", err
	}
	out, err := s.scanSnapshots(rows)
	if err != nil {
		return nil, "", err
	}
	out, next := page(out, f.Page, func(sn sbx.Snapshot) (time.Time, string) { return sn.CreatedAt, sn.ID })
	return out, next, nil
}

// OpenSnapshots lists a provider's snapshots that hold or may hold storage
// (creating, ready), oldest first: what reconcile compares with the
// provider's, and the meter bills.
func (s *Store) OpenSnapshots(ctx context.Context, provider string) ([]sbx.Snapshot, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+snapshotColumns+` FROM snapshots
		WHERE (provider = ? OR ? = '') AND state IN ('creating', 'ready') ORDER BY created_at, id`, provider, provider)
	if err != nil {
		return nil, err
	}
	return s.scanSnapshots(rows)
}

func (s *Store) scanSnapshots(rows *sql.Rows) ([]sbx.Snapshot, error) {
	defer rows.Close()
	out := []sbx.Snapshot{}
	for rows.Next() {
		sn, err := s.scanSnapshot(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sn)
	}
	return out, rows.Err()
}

func (s *Store) scanSnapshot(row scanner) (sbx.Snapshot, error) {
	var (
		sn                         sbx.Snapshot
		meta, env, handle, token   string
		purpose, state             string
		pausedUS, created, settled int64
		ready, deleted             sql.NullInt64
	)
	err := row.Scan(&sn.ID, &sn.OrgID, &sn.WorkspaceID, &sn.ProjectID, &sn.SourceSandboxID, &sn.Provider, &sn.TemplateID,
		&sn.TemplateVersion, &sn.Name, &meta, &sn.Memory, &purpose, &state, &sn.SizeBytes, &pausedUS, &sn.Resources.MilliCPU,
		&sn.Resources.MemoryMB, &sn.Resources.DiskMB, &env, &handle, &token, &sn.Diagnostic, &created, &ready, &deleted,
		&sn.BilledMicros, &sn.UnbilledNanos, &settled)
	if err != nil {
		return sn, err
	}
	sn.Purpose, sn.State, sn.Paused = sbx.SnapshotPurpose(purpose), sbx.SnapshotState(state), time.Duration(pausedUS)*time.Microsecond
	sn.CreatedAt, sn.LastSettledAt = time.UnixMicro(created).UTC(), time.UnixMicro(settled).UTC()
	sn.ReadyAt, sn.DeletedAt = fromMicros(ready), fromMicros(deleted)
	if err := json.Unmarshal([]byte(meta), &sn.Metadata); err != nil {
		return sn, fmt.Errorf("snapshot %s metadata: %w", sn.ID, err)
	}
	if err := json.Unmarshal([]byte(env), &sn.EnvVarNames); err != nil {
		return sn, fmt.Errorf("snapshot %s env names: %w", sn.ID, err)
	}
	if handle != "" {
		if err := json.Unmarshal([]byte(handle), &sn.Handle); err != nil {
			return sn, fmt.Errorf("snapshot %s handle: %w", sn.ID, err)
		}
	}
	if sn.AccessToken, err = s.seal.Open(token, snapshotTokenContext(sn.ID, sn.OrgID)); err != nil {
		return sn, fmt.Errorf("snapshot %s access token: %w", sn.ID, err)
	}
	return sn, nil
}

// SettleSnapshot bills snapshot id's storage up to now: the meter's call
// for every snapshot that holds storage.
func (s *Store) SettleSnapshot(ctx context.Context, id string, now time.Time) (StorageSettlement, error) {
	var st StorageSettlement
	err := s.write(ctx, func(tx db) error {
		sn, err := s.getSnapshot(ctx, tx, "", id, true)
		if err != nil {
			return err
		}
		if st, err = s.settleSnapshotInTx(ctx, tx, &sn, now); err != nil || st.To.IsZero() {
			return err
		}
		_, err = tx.exec(ctx, `UPDATE snapshots SET billed_micros = ?, unbilled_nanos = ?, last_settled_at = ? WHERE id = ?`,
			sn.BilledMicros, sn.UnbilledNanos, sn.LastSettledAt.UnixMicro(), sn.ID)
		return err
	})
	return st, err
}

// settleSnapshotInTx settles sn's storage in tx up to now, while it holds
// some (creating, ready); the caller writes its credit fields.
func (s *Store) settleSnapshotInTx(ctx context.Context, tx db, sn *sbx.Snapshot, now time.Time) (StorageSettlement, error) {
	if sn.State != sbx.SnapshotCreating && sn.State != sbx.SnapshotReady {
		return StorageSettlement{}, nil
	}
	h := held{kind: sbx.StorageSnapshot, rate: pricing.SnapshotStorage, id: sn.ID, orgID: sn.OrgID, projectID: sn.ProjectID,
		provider: sn.Provider, bytes: sn.SizeBytes, billed: &sn.BilledMicros, unbilled: &sn.UnbilledNanos, settled: &sn.LastSettledAt}
	return s.settleHeld(ctx, tx, h, now)
}

// ReadySnapshots lists template's ready snapshots (purpose template) that
// are ready, newest first.
func (s *Store) ReadySnapshots(ctx context.Context, templateID string) ([]sbx.Snapshot, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+snapshotColumns+` FROM snapshots
		WHERE purpose = 'template' AND template_id = ? AND state = 'ready' ORDER BY created_at DESC, id DESC`, templateID)
	if err != nil {
		return nil, err
	}
	return s.scanSnapshots(rows)
}

// TemplateUsers is what stands on a template, in every org: sandboxes that
// are not over and snapshots that are not deleted or failed, other than
// the template's own ready snapshots; at most limit of each, oldest first.
func (s *Store) TemplateUsers(ctx context.Context, templateID string, limit int) (u sbx.TemplateUsers, err error) {
	if u.Sandboxes, err = s.ids(ctx, `SELECT provider_sandbox_id FROM sandboxes
		WHERE template_id = ? AND state IN ('starting', 'running', 'paused') ORDER BY created_at, id LIMIT ?`, templateID, limit); err != nil {
		return u, err
	}
	u.Snapshots, err = s.ids(ctx, `SELECT id FROM snapshots
		WHERE template_id = ? AND state IN ('creating', 'ready') AND purpose <> 'template' ORDER BY created_at, id LIMIT ?`, templateID, limit)
	return u, err
}
