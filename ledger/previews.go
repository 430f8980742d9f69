package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sbxdev/sbx"
)

// Preview links (sbx.PreviewLink): rows of preview_links, each one port of
// one sandbox, found by ID and checked against the hash of its secret.

const previewLinkColumns = `id, org_id, sandbox_id, port, created_at, expires_at, revoked_at`

// InsertPreviewLink records l, opened by secret (only its hash is kept).
func (s *Store) InsertPreviewLink(ctx context.Context, l sbx.PreviewLink, secret string) error {
	return s.write(ctx, func(tx db) error {
		_, err := tx.exec(ctx, `INSERT INTO preview_links (`+previewLinkColumns+`, secret_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			l.ID, l.OrgID, l.SandboxID, l.Port, l.CreatedAt.UnixMicro(), l.ExpiresAt.UnixMicro(), micros(l.RevokedAt), hashKey(secret))
		return err
	})
}

// PreviewLink finds link id when secret is its secret; any other secret,
// like an ID that names no link, is not found.
func (s *Store) PreviewLink(ctx context.Context, id, secret string) (sbx.PreviewLink, error) {
	var hash string
	l, err := scanPreviewLink(s.read(ctx).row(ctx, `SELECT `+previewLinkColumns+`, secret_hash FROM preview_links WHERE id = ?`, id), &hash)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && hash != hashKey(secret)) {
		return sbx.PreviewLink{}, sbx.Errorf(sbx.ENotFound, "preview link not found")
	}
	return l, err
}

// PreviewLinks lists sandbox sandboxID's links, newest first.
func (s *Store) PreviewLinks(ctx context.Context, sandboxID string) ([]sbx.PreviewLink, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+previewLinkColumns+`, secret_hash FROM preview_links
		WHERE sandbox_id = ? ORDER BY created_at DESC, id`, sandboxID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []sbx.PreviewLink{}
	for rows.Next() {
		var hash string
		l, err := scanPreviewLink(rows, &hash)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// RevokePreviewLink ends link id of sandbox sandboxID at now (a link
// revoked already keeps its first revocation).
func (s *Store) RevokePreviewLink(ctx context.Context, sandboxID, id string, now time.Time) (sbx.PreviewLink, error) {
	var l sbx.PreviewLink
	err := s.write(ctx, func(tx db) error {
		var hash string
		var err error
		l, err = scanPreviewLink(tx.row(ctx, `SELECT `+previewLinkColumns+`, secret_hash FROM preview_links
			WHERE id = ? AND sandbox_id = ?`+tx.forUpdate(), id, sandboxID), &hash)
		if errors.Is(err, sql.ErrNoRows) {
			return sbx.Errorf(sbx.ENotFound, "preview link %s not found", id)
		}
		if err != nil || !l.RevokedAt.IsZero() {
			return err
		}
		l.RevokedAt = now.UTC()
		_, err = tx.exec(ctx, `UPDATE preview_links SET revoked_at = ? WHERE id = ?`, now.UnixMicro(), id)
		return err
	})
	return l, err
}

func scanPreviewLink(row interface{ Scan(...any) error }, hash *string) (sbx.PreviewLink, error) {
	var l sbx.PreviewLink
	var created, expires int64
	var revoked sql.NullInt64
	if err := row.Scan(&l.ID, &l.OrgID, &l.SandboxID, &l.Port, &created, &expires, &revoked, hash); err != nil {
		return l, err
	}
	l.CreatedAt, l.ExpiresAt, l.RevokedAt = time.UnixMicro(created).UTC(), time.UnixMicro(expires).UTC(), fromMicros(revoked)
	return l, nil
}
