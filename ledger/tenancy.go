package ledger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// KeyPrefix starts every API key secret, so that leaked keys are recognisable.
const KeyPrefix = "sbx_"

// CreateOrg creates an org with a workspace and a project named "default".
func (s *Store) CreateOrg(ctx context.Context, name string, now time.Time) (sbx.Org, sbx.Workspace, sbx.Project, error) {
	org := sbx.Org{ID: uuid.NewString(), Name: name, CreatedAt: now}
	ws := sbx.Workspace{ID: uuid.NewString(), OrgID: org.ID, Name: "default", CreatedAt: now}
	p := sbx.Project{ID: uuid.NewString(), OrgID: org.ID, WorkspaceID: ws.ID, Name: "default", CreatedAt: now}
	err := s.write(ctx, func(tx db) error {
		var n int
		if err := tx.row(ctx, `SELECT count(*) FROM orgs WHERE name = ?`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return sbx.Errorf(sbx.EConflict, "org %q already exists", name)
		}
		if _, err := tx.exec(ctx, `INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)`, org.ID, org.Name, now.UnixMicro()); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `INSERT INTO workspaces (id, org_id, name, created_at) VALUES (?, ?, ?, ?)`, ws.ID, org.ID, ws.Name, now.UnixMicro()); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO projects (id, org_id, workspace_id, name, created_at) VALUES (?, ?, ?, ?, ?)`, p.ID, org.ID, ws.ID, p.Name, now.UnixMicro())
		return err
	})
	return org, ws, p, err
}

// CountOrgs returns how many orgs exist.
func (s *Store) CountOrgs(ctx context.Context) (int, error) {
	var n int
	err := s.read().row(ctx, `SELECT count(*) FROM orgs`).Scan(&n)
	return n, err
}

// CreateAPIKey makes the key k describes (its org; its project, when not
// empty; its name; whether it is the operator's) and returns it with its
// secret; only the secret's SHA-256 is stored.
func (s *Store) CreateAPIKey(ctx context.Context, k sbx.APIKey, now time.Time) (sbx.APIKey, string, error) {
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return sbx.APIKey{}, "", err
	}
	secret := KeyPrefix + hex.EncodeToString(raw)
	orgID, projectID := k.OrgID, k.ProjectID
	k.ID, k.Prefix, k.CreatedAt = uuid.NewString(), secret[:len(KeyPrefix)+6], now
	err := s.write(ctx, func(tx db) error {
		if projectID != "" {
			var n int
			if err := tx.row(ctx, `SELECT count(*) FROM projects WHERE id = ? AND org_id = ?`, projectID, orgID).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return sbx.Errorf(sbx.ENotFound, "project %s not found in org %s", projectID, orgID)
			}
		}
		_, err := tx.exec(ctx, `INSERT INTO api_keys (id, org_id, project_id, name, prefix, hash, created_at, operator) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			k.ID, orgID, nullString(projectID), k.Name, k.Prefix, hashKey(secret), now.UnixMicro(), k.Operator)
		return err
	})
	if err != nil {
		return sbx.APIKey{}, "", err
	}
	return k, secret, nil
}

// Authenticate finds the caller a key secret acts for.
func (s *Store) Authenticate(ctx context.Context, secret string) (sbx.Caller, error) {
	unauthorized := sbx.Errorf(sbx.EUnauthorized, "the API key is not valid")
	if !strings.HasPrefix(secret, KeyPrefix) {
		return sbx.Caller{}, unauthorized
	}
	var c sbx.Caller
	var project sql.NullString
	var keyCreated, orgCreated int64
	err := s.read().row(ctx, `
		SELECT k.id, k.name, k.prefix, k.project_id, k.created_at, k.operator, o.id, o.name, o.created_at
		FROM api_keys k JOIN orgs o ON o.id = k.org_id
		WHERE k.hash = ? AND k.revoked_at IS NULL`, hashKey(secret)).
		Scan(&c.Key.ID, &c.Key.Name, &c.Key.Prefix, &project, &keyCreated, &c.Key.Operator, &c.Org.ID, &c.Org.Name, &orgCreated)
	if errors.Is(err, sql.ErrNoRows) {
		return sbx.Caller{}, unauthorized
	}
	if err != nil {
		return sbx.Caller{}, err
	}
	c.Key.OrgID, c.Key.ProjectID = c.Org.ID, project.String
	c.Key.CreatedAt, c.Org.CreatedAt = time.UnixMicro(keyCreated).UTC(), time.UnixMicro(orgCreated).UTC()
	// An org-wide key acts in the org's first project.
	err = s.read().row(ctx, `
		SELECT p.id, p.name, p.created_at, w.id, w.name, w.created_at
		FROM projects p JOIN workspaces w ON w.id = p.workspace_id
		WHERE p.org_id = ? AND (p.id = ? OR ? = '')
		ORDER BY p.created_at, p.id LIMIT 1`, c.Org.ID, c.Key.ProjectID, c.Key.ProjectID).
		Scan(&c.Project.ID, &c.Project.Name, &keyCreated, &c.Workspace.ID, &c.Workspace.Name, &orgCreated)
	if err != nil {
		return sbx.Caller{}, err
	}
	c.Project.OrgID, c.Project.WorkspaceID, c.Project.CreatedAt = c.Org.ID, c.Workspace.ID, time.UnixMicro(keyCreated).UTC()
	c.Workspace.OrgID, c.Workspace.CreatedAt = c.Org.ID, time.UnixMicro(orgCreated).UTC()
	return c, nil
}

// Projects lists an org's projects.
func (s *Store) Projects(ctx context.Context, orgID string) ([]sbx.Project, error) {
	rows, err := s.read().query(ctx, `SELECT id, workspace_id, name, created_at FROM projects WHERE org_id = ? ORDER BY created_at, id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sbx.Project
	for rows.Next() {
		p := sbx.Project{OrgID: orgID}
		var created int64
		if err := rows.Scan(&p.ID, &p.WorkspaceID, &p.Name, &created); err != nil {
			return nil, err
		}
		p.CreatedAt = time.UnixMicro(created).UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}

func hashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
