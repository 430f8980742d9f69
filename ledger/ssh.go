package ledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// SSH: public keys registered to a member of an org or to a project
// (ssh_keys), and the short-lived tokens that open one sandbox through the
// SSH gateway (ssh_tokens, hashed like API keys). Who may register what is
// the sshauth service's question; the ledger keeps the rows, one per key
// and org, at most sbx.MaxSSHKeysPerScope per member or project.

// SSHTokenPrefix starts every SSH token, so that a leaked one is recognisable.
const SSHTokenPrefix = "sbxssh_"

const sshKeyColumns = `id, org_id, user_id, project_id, name, type, fingerprint, public_key, created_by, created_at`

func scanSSHKey(row scanner) (sbx.SSHKey, error) {
	var k sbx.SSHKey
	var user, project sql.NullString
	var created int64
	if err := row.Scan(&k.ID, &k.OrgID, &user, &project, &k.Name, &k.Type, &k.Fingerprint, &k.PublicKey, &k.CreatedBy, &created); err != nil {
		return k, err
	}
	k.UserID, k.ProjectID = user.String, project.String
	k.CreatedAt = time.UnixMicro(created).UTC()
	return k, nil
}

// CreateSSHKey records k (its org, its member or its project, name, type,
// fingerprint, public key and the API key registering it) with a new ID. A
// key already registered in the org is a conflict naming the registration;
// a member must belong to a workspace of the org, a project to the org.
func (s *Store) CreateSSHKey(ctx context.Context, k sbx.SSHKey, now time.Time) (sbx.SSHKey, error) {
	if (k.UserID == "") == (k.ProjectID == "") {
		return sbx.SSHKey{}, sbx.Errorf(sbx.EInvalid, "an SSH key is a member's or a project's, one of them")
	}
	err := s.write(ctx, func(tx db) error {
		// The org's row is locked, so that registrations in one org take
		// turns: the checks below stay true until the insert.
		var locked string
		err := tx.row(ctx, `SELECT id FROM orgs WHERE id = ?`+tx.forUpdate(), k.OrgID).Scan(&locked)
		if errors.Is(err, sql.ErrNoRows) {
			return sbx.Errorf(sbx.ENotFound, "org %s not found", k.OrgID)
		}
		if err != nil {
			return err
		}
		var n int
		scope, arg, whose := `user_id = ?`, k.UserID, "this member"
		if k.ProjectID != "" {
			scope, arg, whose = `project_id = ?`, k.ProjectID, "this project"
			err = tx.row(ctx, `SELECT count(*) FROM projects WHERE id = ? AND org_id = ?`, k.ProjectID, k.OrgID).Scan(&n)
			if err == nil && n == 0 {
				err = sbx.Errorf(sbx.ENotFound, "project %s not found", k.ProjectID)
			}
		} else {
			err = tx.row(ctx, `SELECT count(*) FROM memberships WHERE user_id = ? AND org_id = ?`, k.UserID, k.OrgID).Scan(&n)
			if err == nil && n == 0 {
				err = sbx.Errorf(sbx.ENotFound, "user %s is not a member of this org", k.UserID)
			}
		}
		if err != nil {
			return err
		}
		had, err := scanSSHKey(tx.row(ctx, `SELECT `+sshKeyColumns+` FROM ssh_keys WHERE org_id = ? AND fingerprint = ?`, k.OrgID, k.Fingerprint))
		switch {
		case err == nil:
			return sbx.Errorf(sbx.EConflict, "this key (%s) is registered in the org already, as %s (%s); remove that one first", k.Fingerprint, had.Name, had.ID)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := tx.row(ctx, `SELECT count(*) FROM ssh_keys WHERE org_id = ? AND `+scope, k.OrgID, arg).Scan(&n); err != nil {
			return err
		}
		if n >= sbx.MaxSSHKeysPerScope {
			return sbx.Errorf(sbx.EConflict, "%s has %d SSH keys, the most it may have; remove one first", whose, n)
		}
		k.ID, k.CreatedAt = uuid.NewString(), now
		_, err = tx.exec(ctx, `INSERT INTO ssh_keys (`+sshKeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.ID, k.OrgID, nullString(k.UserID), nullString(k.ProjectID), k.Name, k.Type, k.Fingerprint, k.PublicKey, k.CreatedBy, now.UnixMicro())
		if isUniqueViolation(err) {
			return sbx.Errorf(sbx.EConflict, "this key (%s) is registered in the org already", k.Fingerprint)
		}
		return err
	})
	if err != nil {
		return sbx.SSHKey{}, err
	}
	return k, nil
}

// SSHKeys returns a page of an org's SSH keys, oldest first.
func (s *Store) SSHKeys(ctx context.Context, orgID string, p Page) ([]sbx.SSHKey, string, error) {
	where, args, err := after(p, "created_at", "id")
	if err != nil {
		return nil, "", err
	}
	rows, err := s.read(ctx).query(ctx, `SELECT `+sshKeyColumns+` FROM ssh_keys WHERE org_id = ? AND `+where+` ORDER BY created_at, id LIMIT ?`,
		append(append([]any{orgID}, args...), limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	out, err := scanSSHKeys(rows)
	if err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(k sbx.SSHKey) (time.Time, string) { return k.CreatedAt, k.ID })
	return out, next, nil
}

func scanSSHKeys(rows *sql.Rows) ([]sbx.SSHKey, error) {
	defer rows.Close()
	out := []sbx.SSHKey{}
	for rows.Next() {
		k, err := scanSSHKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// GetSSHKey finds an SSH key of an org by its ID or its fingerprint.
func (s *Store) GetSSHKey(ctx context.Context, orgID, ref string) (sbx.SSHKey, error) {
	return getSSHKey(ctx, s.read(ctx), orgID, ref, false)
}

func getSSHKey(ctx context.Context, q db, orgID, ref string, lock bool) (sbx.SSHKey, error) {
	k, err := scanSSHKey(q.row(ctx, `SELECT `+sshKeyColumns+` FROM ssh_keys WHERE org_id = ? AND (id = ? OR fingerprint = ?)`+q.forUpdateIf(lock),
		orgID, ref, ref))
	if errors.Is(err, sql.ErrNoRows) {
		return k, sbx.Errorf(sbx.ENotFound, "SSH key %s not found", ref)
	}
	return k, err
}

// DeleteSSHKey removes an SSH key of an org, by its ID, and returns what it
// was; connections it opened stay open.
func (s *Store) DeleteSSHKey(ctx context.Context, orgID, id string) (sbx.SSHKey, error) {
	var k sbx.SSHKey
	err := s.write(ctx, func(tx db) error {
		var err error
		if k, err = getSSHKey(ctx, tx, orgID, id, true); err != nil {
			return err
		}
		_, err = tx.exec(ctx, `DELETE FROM ssh_keys WHERE id = ?`, k.ID)
		return err
	})
	return k, err
}

// SSHKeysByFingerprint returns every registration of the key with this
// fingerprint, one per org at most.
func (s *Store) SSHKeysByFingerprint(ctx context.Context, fingerprint string) ([]sbx.SSHKey, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+sshKeyColumns+` FROM ssh_keys WHERE fingerprint = ? ORDER BY created_at, id`, fingerprint)
	if err != nil {
		return nil, err
	}
	return scanSSHKeys(rows)
}

// CreateSSHToken makes a token that opens sandbox t.SandboxID as API key
// t.KeyID of org t.OrgID until t.ExpiresAt, and returns it with its secret
// (only the secret's SHA-256 is stored). Tokens that expired a day ago or
// more are removed meanwhile.
func (s *Store) CreateSSHToken(ctx context.Context, t sbx.SSHToken, now time.Time) (sbx.SSHToken, string, error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return sbx.SSHToken{}, "", err
	}
	secret := SSHTokenPrefix + hex.EncodeToString(raw)
	t.ID, t.CreatedAt = uuid.NewString(), now
	err := s.write(ctx, func(tx db) error {
		if _, err := tx.exec(ctx, `DELETE FROM ssh_tokens WHERE expires_at < ?`, now.Add(-24*time.Hour).UnixMicro()); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO ssh_tokens (id, hash, org_id, sandbox_id, key_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.ID, hashKey(secret), t.OrgID, t.SandboxID, t.KeyID, now.UnixMicro(), t.ExpiresAt.UnixMicro())
		return err
	})
	if err != nil {
		return sbx.SSHToken{}, "", err
	}
	return t, secret, nil
}

// SSHToken finds the token whose secret this is, expired or not; a secret
// that is no token's is unauthorized.
func (s *Store) SSHToken(ctx context.Context, secret string) (sbx.SSHToken, error) {
	unauthorized := sbx.Errorf(sbx.EUnauthorized, "the SSH token is not valid")
	if !strings.HasPrefix(secret, SSHTokenPrefix) {
		return sbx.SSHToken{}, unauthorized
	}
	var t sbx.SSHToken
	var created, expires int64
	err := s.read(ctx).row(ctx, `SELECT id, org_id, sandbox_id, key_id, created_at, expires_at FROM ssh_tokens WHERE hash = ?`, hashKey(secret)).
		Scan(&t.ID, &t.OrgID, &t.SandboxID, &t.KeyID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return sbx.SSHToken{}, unauthorized
	}
	if err != nil {
		return sbx.SSHToken{}, err
	}
	t.CreatedAt, t.ExpiresAt = time.UnixMicro(created).UTC(), time.UnixMicro(expires).UTC()
	return t, nil
}
