package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sbxdev/sbx"
)

// Runtimes: one per project, made with it (insertProject). A runtime's
// status is read from its current sandbox's state, so a sandbox that ends
// by any road (timeout, delete, failure) leaves its runtime idle.

// defaultRuntimeTemplate is a new runtime's template (the column's default).
const defaultRuntimeTemplate = "base"

// runtimeColumns are what scanRuntime reads: the runtime joined to its
// current sandbox (alias s) for the state.
const runtimeColumns = `r.id, r.org_id, r.workspace_id, r.project_id, r.sandbox_id, s.state, s.provider_sandbox_id, r.template_id, r.milli_cpu, r.memory_mb,
	r.timeout_s, r.ports, r.env, r.labels, r.created_at, r.updated_at, r.egress`

const runtimeFrom = ` FROM runtimes r LEFT JOIN sandboxes s ON s.id = r.sandbox_id `

// Runtime returns the runtime of a project.
func (s *Store) Runtime(ctx context.Context, projectID string) (sbx.Runtime, error) {
	rt, err := scanRuntime(s.read(ctx).row(ctx, `SELECT `+runtimeColumns+runtimeFrom+`WHERE r.project_id = ?`, projectID))
	if errors.Is(err, sql.ErrNoRows) {
		return rt, sbx.Errorf(sbx.ENotFound, "project %s has no runtime", projectID)
	}
	return rt, err
}

// GetRuntime finds runtime id in a workspace of an org.
func (s *Store) GetRuntime(ctx context.Context, orgID, workspaceID, id string) (sbx.Runtime, error) {
	return getRuntime(ctx, s.read(ctx), orgID, workspaceID, id)
}

func getRuntime(ctx context.Context, q db, orgID, workspaceID, id string) (sbx.Runtime, error) {
	rt, err := scanRuntime(q.row(ctx, `SELECT `+runtimeColumns+runtimeFrom+`WHERE r.id = ? AND r.org_id = ? AND r.workspace_id = ?`,
		id, orgID, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return rt, sbx.Errorf(sbx.ENotFound, "runtime %s not found in this workspace", id)
	}
	return rt, err
}

// Runtimes returns a page of a workspace's runtimes, oldest first; with
// projectID, only that project's.
func (s *Store) Runtimes(ctx context.Context, orgID, workspaceID, projectID string, p Page) ([]sbx.Runtime, string, error) {
	where, args, err := after(p, "r.created_at", "r.id")
	if err != nil {
		return nil, "", err
	}
	if projectID != "" {
		where += " AND r.project_id = ?"
		args = append(args, projectID)
	}
	rows, err := s.read(ctx).query(ctx, `SELECT `+runtimeColumns+runtimeFrom+`WHERE r.org_id = ? AND r.workspace_id = ? AND `+where+`
		ORDER BY r.created_at, r.id LIMIT ?`, append(append([]any{orgID, workspaceID}, args...), limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []sbx.Runtime
	for rows.Next() {
		rt, err := scanRuntime(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, rt)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(x sbx.Runtime) (time.Time, string) { return x.CreatedAt, x.ID })
	return out, next, nil
}

// SetRuntimeConfig replaces what a runtime's next sandbox is made with.
func (s *Store) SetRuntimeConfig(ctx context.Context, orgID, workspaceID, id string, cfg sbx.RuntimeConfig, now time.Time) (sbx.Runtime, error) {
	ports, _ := json.Marshal(nonNil(cfg.Ports))
	env, _ := json.Marshal(nonNilMap(cfg.Env))
	labels, _ := json.Marshal(nonNilMap(cfg.Labels))
	var rt sbx.Runtime
	err := s.write(ctx, func(tx db) error {
		res, err := tx.exec(ctx, `UPDATE runtimes SET template_id = ?, milli_cpu = ?, memory_mb = ?, timeout_s = ?, ports = ?, env = ?, labels = ?,
			egress = ?, updated_at = ? WHERE id = ? AND org_id = ? AND workspace_id = ?`,
			cfg.TemplateID, cfg.Resources.MilliCPU, cfg.Resources.MemoryMB, int64(cfg.Timeout/time.Second), string(ports), string(env), string(labels),
			encodeEgress(cfg.Egress), now.UnixMicro(), id, orgID, workspaceID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return sbx.Errorf(sbx.ENotFound, "runtime %s not found in this workspace", id)
		}
		if rt, err = getRuntime(ctx, tx, orgID, workspaceID, id); err != nil {
			return err
		}
		return appendOrgEvent(ctx, tx, runtimeEvent(orgID, workspaceID, rt.ProjectID, id, "runtime.configured", now, map[string]any{}, ""))
	})
	return rt, err
}

func scanRuntime(r interface{ Scan(...any) error }) (sbx.Runtime, error) {
	var rt sbx.Runtime
	var sandbox, state, providerID sql.NullString
	var timeout, created, updated int64
	var ports, env, labels, egress string
	err := r.Scan(&rt.ID, &rt.OrgID, &rt.WorkspaceID, &rt.ProjectID, &sandbox, &state, &providerID, &rt.Config.TemplateID,
		&rt.Config.Resources.MilliCPU, &rt.Config.Resources.MemoryMB, &timeout, &ports, &env, &labels, &created, &updated, &egress)
	if err != nil {
		return rt, err
	}
	if rt.Config.Egress, err = decodeEgress(egress); err != nil {
		return rt, fmt.Errorf("runtime %s egress: %w", rt.ID, err)
	}
	rt.Status = sbx.RuntimeStatus(sbx.State(state.String))
	if rt.Status != sbx.RuntimeIdle {
		rt.SandboxID, rt.ProviderSandboxID = sandbox.String, providerID.String
	}
	rt.Config.Timeout = time.Duration(timeout) * time.Second
	if err := errors.Join(json.Unmarshal([]byte(ports), &rt.Config.Ports), json.Unmarshal([]byte(env), &rt.Config.Env),
		json.Unmarshal([]byte(labels), &rt.Config.Labels)); err != nil {
		return rt, err
	}
	rt.CreatedAt, rt.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return rt, nil
}

// InsertRuntimeSandbox records sb as the new current sandbox of runtime
// runtimeID, with the start's idempotency key (once, when not nil; as
// InsertSandboxOnce), in one transaction: the runtime's row is locked, and a runtime
// whose current sandbox has not ended is a conflict naming it, so two starts
// (on any serve) never give one runtime two sandboxes. The lock is taken
// before the current sandbox is read, in a statement of its own: a read
// joined to the locking one would see, on PostgreSQL, the snapshot from
// before a concurrent start committed.
func (s *Store) InsertRuntimeSandbox(ctx context.Context, runtimeID string, once *Once, sb sbx.Sandbox, events ...sbx.Event) error {
	return s.write(ctx, func(tx db) error {
		if err := claimOnce(ctx, tx, once, sb.ID, sb.CreatedAt); err != nil {
			return err
		}
		var current sql.NullString
		err := tx.row(ctx, `SELECT sandbox_id FROM runtimes WHERE id = ? AND org_id = ?`+tx.forUpdate(), runtimeID, sb.OrgID).Scan(&current)
		if errors.Is(err, sql.ErrNoRows) {
			return sbx.Errorf(sbx.ENotFound, "runtime %s not found", runtimeID)
		}
		if err != nil {
			return err
		}
		if current.Valid {
			var state, providerID string
			if err := tx.row(ctx, `SELECT state, provider_sandbox_id FROM sandboxes WHERE id = ?`, current.String).Scan(&state, &providerID); err != nil {
				return err
			}
			if status := sbx.RuntimeStatus(sbx.State(state)); status != sbx.RuntimeIdle {
				return sbx.Errorf(sbx.EConflict, "runtime %s is %s with sandbox %s: reset it before starting another", runtimeID, status, providerID)
			}
		}
		if err := s.insertSandbox(ctx, tx, sb, events); err != nil {
			return err
		}
		_, err = tx.exec(ctx, `UPDATE runtimes SET sandbox_id = ?, updated_at = ? WHERE id = ?`, sb.ID, sb.CreatedAt.UnixMicro(), runtimeID)
		if err != nil {
			return err
		}
		return appendOrgEvent(ctx, tx, runtimeEvent(sb.OrgID, sb.WorkspaceID, sb.ProjectID, runtimeID, "runtime.started", sb.CreatedAt,
			map[string]any{"sandboxID": sb.ProviderSandboxID}, sb.ID))
	})
}
