package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/sbxdev/sbx"
)

// Once is sbx.Once.
type Once = sbx.Once

// OnceTTL is how long an idempotency key holds.
const OnceTTL = 24 * time.Hour

// ErrOnceTaken is a create's refusal when another create recorded its key
// first (a concurrent retry): that one's sandbox is the answer.
var ErrOnceTaken = sbx.Errorf(sbx.EConflict, "another request with this Idempotency-Key is being served")

// FindOnce returns the sandbox that the request o names made at most
// OnceTTL before now, and the hash of that request; an empty ID if none.
func (s *Store) FindOnce(ctx context.Context, o Once, now time.Time) (sandboxID, hash string, err error) {
	err = s.read(ctx).row(ctx, `SELECT sandbox_id, request_hash FROM idempotency_keys WHERE api_key_id = ? AND key = ? AND created_at >= ?`,
		o.APIKeyID, o.Key, now.Add(-OnceTTL).UnixMicro()).Scan(&sandboxID, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", nil
	}
	return sandboxID, hash, err
}

// claimOnce records in tx that o made sandboxID at now, taking over a
// record of the same key older than OnceTTL; ErrOnceTaken when a younger
// one holds the key.
func claimOnce(ctx context.Context, tx db, o *Once, sandboxID string, now time.Time) error {
	if o == nil {
		return nil
	}
	res, err := tx.exec(ctx, `INSERT INTO idempotency_keys (api_key_id, key, request_hash, sandbox_id, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (api_key_id, key) DO UPDATE SET request_hash = excluded.request_hash, sandbox_id = excluded.sandbox_id, created_at = excluded.created_at
		WHERE idempotency_keys.created_at < ?`, o.APIKeyID, o.Key, o.Hash, sandboxID, now.UnixMicro(), now.Add(-OnceTTL).UnixMicro())
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cmpErr(err, ErrOnceTaken)
	}
	return nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}
