package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// Secrets: named values of an org (user_id NULL) or of one member of it,
// sealed at rest with the store's seal box. Only SecretEnv reads a value
// back, to make the environment of a sandbox a runtime starts; every other
// read leaves it out.
//
// A caller acting as a member sees the org's secrets and their own. Where a
// secret is found by name and the member has one of their own by that name
// beside the org's, the member's own is the one meant (GetSecret,
// DeleteSecret); an ID always names exactly one.

const secretColumns = `id, org_id, user_id, name, created_at, updated_at`

func scanSecret(row scanner) (sbx.Secret, error) {
	var sec sbx.Secret
	var user sql.NullString
	var created, updated int64
	if err := row.Scan(&sec.ID, &sec.OrgID, &user, &sec.Name, &created, &updated); err != nil {
		return sec, err
	}
	sec.UserID = user.String
	sec.CreatedAt, sec.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return sec, nil
}

// PutSecret sets the value of the secret name of an org (userID empty) or
// of a member of it (userID): it makes a new secret (true), or gives the one
// that scope already has by that name a new value, keeping its ID (false).
// A scope holds at most sbx.MaxSecretsPerScope secrets.
func (s *Store) PutSecret(ctx context.Context, orgID, userID, name, value string, now time.Time) (sbx.Secret, bool, error) {
	if err := sbx.CheckSecret(name, value); err != nil {
		return sbx.Secret{}, false, err
	}
	sealed := s.seal.Seal(value, secretContext(orgID, userID, name))
	var sec sbx.Secret
	var created bool
	err := s.write(ctx, func(tx db) error {
		// The org's row is locked, so that puts of one org take turns and
		// the count below stays true until the insert.
		var locked string
		err := tx.row(ctx, `SELECT id FROM orgs WHERE id = ?`+tx.forUpdate(), orgID).Scan(&locked)
		if errors.Is(err, sql.ErrNoRows) {
			return sbx.Errorf(sbx.ENotFound, "org %s not found", orgID)
		}
		if err != nil {
			return err
		}
		var n int
		if userID != "" {
			if err := tx.row(ctx, `SELECT count(*) FROM memberships WHERE user_id = ? AND org_id = ?`, userID, orgID).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return sbx.Errorf(sbx.ENotFound, "user %s is not a member of org %s", userID, orgID)
			}
		}
		scope, args := `user_id IS NULL`, []any{orgID}
		if userID != "" {
			scope, args = `user_id = ?`, append(args, userID)
		}
		sec, err = scanSecret(tx.row(ctx, `SELECT `+secretColumns+` FROM secrets WHERE org_id = ? AND `+scope+` AND name = ?`,
			append(args, name)...))
		switch {
		case err == nil:
			created, sec.UpdatedAt = false, now
			_, err = tx.exec(ctx, `UPDATE secrets SET value = ?, updated_at = ? WHERE id = ?`, sealed, now.UnixMicro(), sec.ID)
			return err
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		if err := tx.row(ctx, `SELECT count(*) FROM secrets WHERE org_id = ? AND `+scope, args...).Scan(&n); err != nil {
			return err
		}
		if n >= sbx.MaxSecretsPerScope {
			whose := "the org"
			if userID != "" {
				whose = "this member"
			}
			return sbx.Errorf(sbx.EConflict, "%s has %d secrets, the most one scope may hold; remove one first", whose, n)
		}
		created = true
		sec = sbx.Secret{ID: uuid.NewString(), OrgID: orgID, UserID: userID, Name: name, CreatedAt: now, UpdatedAt: now}
		_, err = tx.exec(ctx, `INSERT INTO secrets (id, org_id, user_id, name, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			sec.ID, orgID, nullString(userID), name, sealed, now.UnixMicro(), now.UnixMicro())
		return err
	})
	if err != nil {
		return sbx.Secret{}, false, err
	}
	return sec, created, nil
}

// Secrets lists the secrets userID sees in an org: the org's, and that
// member's own (userID empty: the org's only), by name, the org's first
// where both have a name. A scope holds at most sbx.MaxSecretsPerScope, so
// the list comes whole.
func (s *Store) Secrets(ctx context.Context, orgID, userID string) ([]sbx.Secret, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+secretColumns+` FROM secrets WHERE org_id = ? AND (user_id IS NULL OR user_id = ?)`,
		orgID, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []sbx.Secret{}
	for rows.Next() {
		sec, err := scanSecret(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	// Sorted here: the dialects' collations order names differently.
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].UserID < out[j].UserID
	})
	return out, rows.Err()
}

// GetSecret finds the secret ref names among those userID sees (the org's,
// and that member's own): ref is a secret's ID, or else its name, the
// member's own secret by that name before the org's.
func (s *Store) GetSecret(ctx context.Context, orgID, userID, ref string) (sbx.Secret, error) {
	return getSecret(ctx, s.read(ctx), orgID, userID, ref, false)
}

func getSecret(ctx context.Context, q db, orgID, userID, ref string, lock bool) (sbx.Secret, error) {
	suffix := q.forUpdateIf(lock)
	rows, err := q.query(ctx, `SELECT `+secretColumns+` FROM secrets WHERE org_id = ? AND (user_id IS NULL OR user_id = ?)
		AND (id = ? OR name = ?)`+suffix, orgID, userID, ref, ref)
	if err != nil {
		return sbx.Secret{}, err
	}
	defer rows.Close()
	var byID, own, org *sbx.Secret
	for rows.Next() {
		sec, err := scanSecret(rows)
		if err != nil {
			return sbx.Secret{}, err
		}
		switch {
		case sec.ID == ref:
			byID = &sec
		case sec.UserID != "":
			own = &sec
		default:
			org = &sec
		}
	}
	if err := rows.Err(); err != nil {
		return sbx.Secret{}, err
	}
	for _, sec := range []*sbx.Secret{byID, own, org} {
		if sec != nil {
			return *sec, nil
		}
	}
	if userID == "" {
		return sbx.Secret{}, sbx.Errorf(sbx.ENotFound, "secret %s not found among the org's secrets", ref)
	}
	return sbx.Secret{}, sbx.Errorf(sbx.ENotFound, "secret %s not found among the org's secrets and this member's own", ref)
}

// DeleteSecret removes the secret ref names among those userID sees, found
// as GetSecret finds it (an ID, or a name: the member's own first), value
// and all, and returns what it was.
func (s *Store) DeleteSecret(ctx context.Context, orgID, userID, ref string) (sbx.Secret, error) {
	var sec sbx.Secret
	err := s.write(ctx, func(tx db) error {
		var err error
		if sec, err = getSecret(ctx, tx, orgID, userID, ref, true); err != nil {
			return err
		}
		_, err = tx.exec(ctx, `DELETE FROM secrets WHERE id = ?`, sec.ID)
		return err
	})
	return sec, err
}

// SecretEnv returns the values of the secrets ids chosen, by name, for the
// environment of a sandbox started by userID (empty: a key that acts for no
// member) in an org. Each must be the org's or that member's own: any other
// ID, or one that does not exist, is an sbx.ENotFound error naming it. Two
// chosen secrets with one name (an org's and a member's own) are an
// sbx.EInvalid error naming both; an ID chosen twice counts once.
func (s *Store) SecretEnv(ctx context.Context, orgID, userID string, ids []string) (map[string]string, error) {
	env := map[string]string{}
	var distinct []string
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			distinct = append(distinct, id)
		}
	}
	if len(distinct) == 0 {
		return env, nil
	}
	if max := 2 * sbx.MaxSecretsPerScope; len(distinct) > max {
		return nil, sbx.Invalid("secret_ids", "secret_ids names %d secrets; a start may use at most %d", len(distinct), max)
	}
	args := []any{orgID, userID}
	for _, id := range distinct {
		args = append(args, id)
	}
	rows, err := s.read(ctx).query(ctx, `SELECT id, coalesce(user_id, ''), name, value FROM secrets WHERE org_id = ? AND (user_id IS NULL OR user_id = ?)
		AND id IN (?`+strings.Repeat(", ?", len(distinct)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type found struct{ userID, name, sealed string }
	byID := map[string]found{}
	for rows.Next() {
		var id string
		var f found
		if err := rows.Scan(&id, &f.userID, &f.name, &f.sealed); err != nil {
			return nil, err
		}
		byID[id] = f
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range distinct {
		if _, ok := byID[id]; !ok {
			missing = append(missing, id)
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		return nil, sbx.Errorf(sbx.ENotFound, "secret %s not found among the org's secrets and the caller's own", missing[0])
	default:
		return nil, sbx.Errorf(sbx.ENotFound, "secrets %s not found among the org's secrets and the caller's own", strings.Join(missing, ", "))
	}
	named := map[string]string{} // name → the ID chosen for it
	for _, id := range distinct {
		f := byID[id]
		if other, ok := named[f.name]; ok {
			return nil, sbx.Invalid("secret_ids", "secrets %s and %s are both named %s; an environment variable holds one value, so choose one", other, id, f.name)
		}
		named[f.name] = id
		v, err := s.seal.Open(f.sealed, secretContext(orgID, f.userID, f.name))
		if err != nil {
			return nil, &sbx.Error{Code: sbx.EInternal, Message: fmt.Sprintf("secret %s (%s) does not open with this server's seal key", id, f.name), Err: err}
		}
		env[f.name] = v
	}
	return env, nil
}
