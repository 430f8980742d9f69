package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/sbxdev/sbx"
)

const poolColumns = `template_id, org_id, workspace_id, project_id, min_ready, max_ready, milli_cpu, memory_mb, disk_mb, updated_at`

// SetPool records a template's warm pool, or replaces it.
func (s *Store) SetPool(ctx context.Context, p sbx.Pool) error {
	return s.write(ctx, func(tx db) error {
		if _, err := tx.exec(ctx, `DELETE FROM template_pools WHERE template_id = ?`, p.TemplateID); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO template_pools (`+poolColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.TemplateID, p.OrgID, p.WorkspaceID, p.ProjectID, p.MinReady, p.MaxReady, p.Resources.MilliCPU, p.Resources.MemoryMB,
			p.Resources.DiskMB, p.UpdatedAt.UnixMicro())
		return err
	})
}

// DeletePool forgets a template's warm pool (its members stay members
// until they are killed).
func (s *Store) DeletePool(ctx context.Context, templateID string) error {
	return s.write(ctx, func(tx db) error {
		res, err := tx.exec(ctx, `DELETE FROM template_pools WHERE template_id = ?`, templateID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return sbx.Errorf(sbx.ENotFound, "template %s has no warm pool", templateID)
		}
		return nil
	})
}

// GetPool reads a template's warm pool: a not-found when it has none.
func (s *Store) GetPool(ctx context.Context, templateID string) (sbx.Pool, error) {
	p, err := scanPool(s.read(ctx).row(ctx, `SELECT `+poolColumns+` FROM template_pools WHERE template_id = ?`, templateID))
	if errors.Is(err, sql.ErrNoRows) {
		return p, sbx.Errorf(sbx.ENotFound, "template %s has no warm pool", templateID)
	}
	return p, err
}

// Pools lists every warm pool, by template.
func (s *Store) Pools(ctx context.Context) ([]sbx.Pool, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+poolColumns+` FROM template_pools ORDER BY template_id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []sbx.Pool{}
	for rows.Next() {
		p, err := scanPool(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// PoolMembers lists a template's pool members that are not final.
func (s *Store) PoolMembers(ctx context.Context, templateID string) ([]sbx.Sandbox, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
		WHERE pool = ? AND state IN ('starting', 'running', 'paused') ORDER BY created_at, id`, templateID)
	if err != nil {
		return nil, err
	}
	return s.scanSandboxes(rows)
}

// CheckOut takes one ready member of templateID's pool of size res (running,
// nothing in progress) for another owner, in one transaction: the time it
// waited is settled to its pool's owner up to now, fn makes it the new
// owner's (org, workspace, project, kind, timeout and expiry, metadata, env
// names, token, egress, preview, ports) and names its timeline steps, and
// the new owner's plan admits it; once, when not nil, is recorded with it.
// It answers the sandbox as it is now and the access token its agent held
// (its next token, when it had one, is taken too); a zero sandbox when none
// is ready.
func (s *Store) CheckOut(ctx context.Context, templateID string, res sbx.Resources, once *Once, now time.Time,
	fn func(*sbx.Sandbox) []sbx.Event) (sbx.Sandbox, string, error) {
	var sb sbx.Sandbox
	var old string
	err := s.write(ctx, func(tx db) error {
		skip := ""
		if s.pg {
			skip = " FOR UPDATE SKIP LOCKED"
		}
		var err error
		sb, err = s.scanSandbox(tx.row(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
			WHERE pool = ? AND state = 'running' AND intent = '' AND milli_cpu = ? AND memory_mb = ? AND disk_mb = ? AND gpu_count = 0
			ORDER BY created_at LIMIT 1`+skip, templateID, res.MilliCPU, res.MemoryMB, res.DiskMB))
		if errors.Is(err, sql.ErrNoRows) {
			sb = sbx.Sandbox{}
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.settleInTx(ctx, tx, &sb, sb.State, now); err != nil {
			return err
		}
		old = sb.AccessToken
		events := fn(&sb)
		sb.Pool, sb.UpdatedAt = "", now
		if err := admit(ctx, tx, sb, false); err != nil {
			return err
		}
		if err := claimOnce(ctx, tx, once, sb.ID, now); err != nil {
			return err
		}
		envNames, _ := json.Marshal(nonNil(sb.EnvVarNames))
		meta, _ := json.Marshal(nonNilMap(sb.Metadata))
		ports, _ := json.Marshal(nonNil(sb.Ports))
		_, err = tx.exec(ctx, `UPDATE sandboxes SET org_id = ?, workspace_id = ?, project_id = ?, kind = ?, pool = '', timeout_s = ?,
			expires_at = ?, auto_pause = ?, env_var_names = ?, metadata = ?, access_token = ?, next_token = '', egress = ?, preview_public = ?,
			preview_localhost = ?, preview_no_wake = ?, ports = ?, billed_micros = ?, unbilled_nanos = ?, last_settled_at = ?, updated_at = ?
			WHERE id = ?`,
			sb.OrgID, sb.WorkspaceID, sb.ProjectID, string(sb.Kind), int64(sb.Timeout/time.Second), micros(sb.ExpiresAt), sb.AutoPause,
			string(envNames), string(meta), s.seal.Seal(sb.AccessToken, tokenContext(sb.ID, sb.OrgID)), encodeEgress(sb.Egress),
			sb.Preview.Public, sb.Preview.LocalHost, sb.Preview.NoWake, string(ports), sb.BilledMicros, sb.UnbilledNanos,
			micros(sb.LastSettledAt), sb.UpdatedAt.UnixMicro(), sb.ID)
		if err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM sandbox_metadata WHERE sandbox_id = ?`, sb.ID); err != nil {
			return err
		}
		for k, v := range sb.Metadata {
			if _, err := tx.exec(ctx, `INSERT INTO sandbox_metadata (sandbox_id, key, value) VALUES (?, ?, ?)`, sb.ID, k, v); err != nil {
				return err
			}
		}
		return insertEvents(ctx, tx, sb, events)
	})
	return sb, old, err
}

func scanPool(row scanner) (sbx.Pool, error) {
	var p sbx.Pool
	var updated int64
	err := row.Scan(&p.TemplateID, &p.OrgID, &p.WorkspaceID, &p.ProjectID, &p.MinReady, &p.MaxReady, &p.Resources.MilliCPU,
		&p.Resources.MemoryMB, &p.Resources.DiskMB, &updated)
	p.UpdatedAt = time.UnixMicro(updated).UTC()
	return p, err
}
