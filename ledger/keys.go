package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sbxdev/sbx"
)

const keyColumns = `id, org_id, project_id, user_id, name, prefix, operator, created_at, revoked_at`

func scanKey(row scanner) (sbx.APIKey, error) {
	var k sbx.APIKey
	var project, user sql.NullString
	var created int64
	var revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.OrgID, &project, &user, &k.Name, &k.Prefix, &k.Operator, &created, &revoked); err != nil {
		return k, err
	}
	k.ProjectID, k.UserID = project.String, user.String
	k.CreatedAt, k.RevokedAt = time.UnixMicro(created).UTC(), fromMicros(revoked)
	return k, nil
}

// APIKeys returns a page of an org's keys, revoked ones included, oldest first.
func (s *Store) APIKeys(ctx context.Context, orgID string, p Page) ([]sbx.APIKey, string, error) {
	where, args, err := after(p, "created_at", "id")
	if err != nil {
		return nil, "", err
	}
	rows, err := s.read(ctx).query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE org_id = ? AND `+where+` ORDER BY created_at, id LIMIT ?`,
		append(append([]any{orgID}, args...), limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []sbx.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(k sbx.APIKey) (time.Time, string) { return k.CreatedAt, k.ID })
	return out, next, nil
}

// GetAPIKey finds a key of an org by its ID.
func (s *Store) GetAPIKey(ctx context.Context, orgID, id string) (sbx.APIKey, error) {
	return getKey(ctx, s.read(ctx), orgID, id, false)
}

func getKey(ctx context.Context, q db, orgID, id string, lock bool) (sbx.APIKey, error) {
	suffix := q.forUpdateIf(lock)
	k, err := scanKey(q.row(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE org_id = ? AND id = ?`+suffix, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return k, sbx.Errorf(sbx.ENotFound, "key %s not found", id)
	}
	return k, err
}

// RevokeAPIKey stops a key of an org from working; it stays listed, revoked.
func (s *Store) RevokeAPIKey(ctx context.Context, orgID, id string, now time.Time) (sbx.APIKey, error) {
	var k sbx.APIKey
	err := s.write(ctx, func(tx db) error {
		var err error
		if k, err = getKey(ctx, tx, orgID, id, true); err != nil {
			return err
		}
		if !k.RevokedAt.IsZero() {
			return sbx.Errorf(sbx.EConflict, "key %s was already revoked at %s", id, k.RevokedAt.Format(time.RFC3339))
		}
		k.RevokedAt = now
		_, err = tx.exec(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ?`, now.UnixMicro(), k.ID)
		return err
	})
	return k, err
}
