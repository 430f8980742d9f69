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
const KeyPrefix = sbx.APIKeyPrefix

// NewOrg is sbx.NewOrg.
type NewOrg = sbx.NewOrg

// CreatedOrg is sbx.CreatedOrg.
type CreatedOrg = sbx.CreatedOrg

// CreateOrg creates an unverified org with no plan limits, a workspace and
// a project named "default", and the project's runtime.
func (s *Store) CreateOrg(ctx context.Context, name string, now time.Time) (sbx.Org, sbx.Workspace, sbx.Project, error) {
	c, err := s.CreateOrgWith(ctx, NewOrg{Name: name}, now)
	return c.Org, c.Workspace, c.Project, err
}

// CreateOrgWith creates an org as n describes it, in one transaction with
// its default workspace and project, the project's runtime and, when asked,
// its first key.
func (s *Store) CreateOrgWith(ctx context.Context, n NewOrg, now time.Time) (CreatedOrg, error) {
	if n.KYCStatus == "" {
		n.KYCStatus = sbx.KYCUnverified
	}
	if err := checkName("org", n.Name); err != nil {
		return CreatedOrg{}, err
	}
	if !n.KYCStatus.Valid() {
		return CreatedOrg{}, sbx.Invalid("kyc_status", "kyc_status %q must be unverified, pending or verified", n.KYCStatus)
	}
	if err := checkPlan(n.Plan); err != nil {
		return CreatedOrg{}, err
	}
	out := CreatedOrg{Org: sbx.Org{ID: uuid.NewString(), Name: n.Name, KYCStatus: n.KYCStatus, Plan: n.Plan, CreatedAt: now}}
	var secret string
	err := s.write(ctx, func(tx db) error {
		var count int
		if err := tx.row(ctx, `SELECT count(*) FROM orgs WHERE name = ?`, n.Name).Scan(&count); err != nil {
			return err
		}
		if count > 0 {
			return sbx.Errorf(sbx.EConflict, "org %q already exists", n.Name)
		}
		o, p := out.Org, out.Org.Plan
		var kycAt sql.NullInt64
		if o.KYCStatus != sbx.KYCUnverified {
			kycAt = micros(now)
		}
		if _, err := tx.exec(ctx, `INSERT INTO orgs (id, name, created_at, kyc_status, kyc_updated_at, plan_name, plan_max_sandboxes,
			plan_max_milli_cpu, plan_max_memory_mb, plan_max_gpu_percent, plan_max_members, plan_max_timeout_s, plan_max_disk_mb)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			o.ID, o.Name, now.UnixMicro(), string(o.KYCStatus), kycAt, p.Name, p.MaxSandboxes, p.MaxMilliCPU, p.MaxMemoryMB,
			p.MaxGPUPercent, p.MaxMembers, int64(p.MaxTimeout/time.Second), p.MaxDiskMB); err != nil {
			if isUniqueViolation(err) {
				return sbx.Errorf(sbx.EConflict, "org %q already exists", n.Name)
			}
			return err
		}
		var err error
		if out.Workspace, out.Project, out.Runtime, err = insertWorkspace(ctx, tx, o.ID, "default", now); err != nil {
			return err
		}
		if n.Credits > 0 {
			if _, err := topUp(ctx, tx, o.ID, n.Credits, "initial credits", now); err != nil {
				return err
			}
		}
		if n.Key.Name == "" {
			return nil
		}
		k := n.Key
		k.OrgID, k.ProjectID, k.UserID = o.ID, "", ""
		out.Key, secret, err = insertKey(ctx, tx, k, now)
		return err
	})
	if err != nil {
		return CreatedOrg{}, err
	}
	out.Secret = secret
	return out, nil
}

// CountOrgs returns how many orgs exist.
func (s *Store) CountOrgs(ctx context.Context) (int, error) {
	var n int
	err := s.read(ctx).row(ctx, `SELECT count(*) FROM orgs`).Scan(&n)
	return n, err
}

// CreateAPIKey makes the key k describes (its org; its project or its user,
// when not empty; its name; whether it is the operator's) and returns it
// with its secret; only the secret's SHA-256 is stored. A member's key needs
// its user to be a member of a workspace of the org.
func (s *Store) CreateAPIKey(ctx context.Context, k sbx.APIKey, now time.Time) (sbx.APIKey, string, error) {
	var secret string
	err := s.write(ctx, func(tx db) error {
		var err error
		k, secret, err = insertKey(ctx, tx, k, now)
		return err
	})
	if err != nil {
		return sbx.APIKey{}, "", err
	}
	return k, secret, nil
}

// insertKey checks and records a new key.
func insertKey(ctx context.Context, tx db, k sbx.APIKey, now time.Time) (sbx.APIKey, string, error) {
	if k.ProjectID != "" && k.UserID != "" {
		return sbx.APIKey{}, "", sbx.Errorf(sbx.EInvalid, "a key is a project's or a member's, not both")
	}
	var n int
	if k.ProjectID != "" {
		if err := tx.row(ctx, `SELECT count(*) FROM projects WHERE id = ? AND org_id = ?`, k.ProjectID, k.OrgID).Scan(&n); err != nil {
			return sbx.APIKey{}, "", err
		}
		if n == 0 {
			return sbx.APIKey{}, "", sbx.Errorf(sbx.ENotFound, "project %s not found in org %s", k.ProjectID, k.OrgID)
		}
	}
	if k.UserID != "" {
		if err := tx.row(ctx, `SELECT count(*) FROM memberships WHERE user_id = ? AND org_id = ?`, k.UserID, k.OrgID).Scan(&n); err != nil {
			return sbx.APIKey{}, "", err
		}
		if n == 0 {
			return sbx.APIKey{}, "", sbx.Errorf(sbx.ENotFound, "user %s is not a member of org %s", k.UserID, k.OrgID)
		}
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return sbx.APIKey{}, "", err
	}
	secret := KeyPrefix + hex.EncodeToString(raw)
	k.ID, k.Prefix, k.CreatedAt, k.RevokedAt = uuid.NewString(), secret[:len(KeyPrefix)+6], now, time.Time{}
	_, err := tx.exec(ctx, `INSERT INTO api_keys (id, org_id, project_id, user_id, name, prefix, hash, created_at, operator) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.OrgID, nullString(k.ProjectID), nullString(k.UserID), k.Name, k.Prefix, hashKey(secret), now.UnixMicro(), k.Operator)
	if err != nil {
		return sbx.APIKey{}, "", err
	}
	return k, secret, nil
}

// Authenticate finds the caller a key secret acts for: an org-wide key acts
// as an owner in the org's first project; a project's key as a member in its
// project; a member's key as its user, with the highest role the user holds
// in the org's workspaces, in the first project of the workspace the user
// joined first. A member's key stops working while its user is a member of
// no workspace of the org.
func (s *Store) Authenticate(ctx context.Context, secret string) (sbx.Caller, error) {
	unauthorized := sbx.Errorf(sbx.EUnauthorized, "the API key is not valid")
	if !strings.HasPrefix(secret, KeyPrefix) {
		return sbx.Caller{}, unauthorized
	}
	q := s.read(ctx)
	var c sbx.Caller
	var project, user sql.NullString
	var keyCreated int64
	orgDest, finishOrg := scanOrg(&c.Org)
	dest := append([]any{&c.Key.ID, &c.Key.Name, &c.Key.Prefix, &project, &user, &keyCreated, &c.Key.Operator}, orgDest...)
	err := q.row(ctx, readKeyBySecret, hashKey(secret)).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return sbx.Caller{}, unauthorized
	}
	if err != nil {
		return sbx.Caller{}, err
	}
	finishOrg()
	c.Key.OrgID, c.Key.ProjectID, c.Key.UserID = c.Org.ID, project.String, user.String
	c.Key.CreatedAt = time.UnixMicro(keyCreated).UTC()
	return completeCaller(ctx, q, c)
}

// CallerOf is who key k of its org acts for, as Authenticate finds it for
// a secret: for a key found some other way, or for another credential that
// acts as a key would (an SSH key's sbx.SSHKey.Acts). A member's key whose
// user is a member of no workspace of the org is unauthorized.
func (s *Store) CallerOf(ctx context.Context, k sbx.APIKey) (sbx.Caller, error) {
	q := s.read(ctx)
	c := sbx.Caller{Key: k}
	orgDest, finishOrg := scanOrg(&c.Org)
	err := q.row(ctx, readOrgByID, k.OrgID).Scan(orgDest...)
	if errors.Is(err, sql.ErrNoRows) {
		return sbx.Caller{}, sbx.Errorf(sbx.EUnauthorized, "the key's org %s does not exist", k.OrgID)
	}
	if err != nil {
		return sbx.Caller{}, err
	}
	finishOrg()
	return completeCaller(ctx, q, c)
}

// The reads that find who a key acts for, which every API request makes:
// prepared once (hotReads).
var (
	readKeyBySecret = `SELECT k.id, k.name, k.prefix, k.project_id, k.user_id, k.created_at, k.operator, ` + orgColumns("o.") + `
		FROM api_keys k JOIN orgs o ON o.id = k.org_id
		WHERE k.hash = ? AND k.revoked_at IS NULL`
	readOrgByID = `SELECT ` + orgColumns("") + ` FROM orgs WHERE id = ?`

	callerProject = `SELECT p.id, p.name, p.created_at, w.id, w.name, w.created_at
		FROM projects p JOIN workspaces w ON w.id = p.workspace_id WHERE `
	readOrgKeyProject     = callerProject + `p.org_id = ? ORDER BY p.created_at, p.id LIMIT 1`
	readProjectKeyProject = callerProject + `p.org_id = ? AND p.id = ? LIMIT 1`
	readMemberKeyProject  = callerProject + `p.org_id = ? AND p.workspace_id IN (SELECT workspace_id FROM memberships WHERE user_id = ? AND org_id = ?)
			ORDER BY (SELECT created_at FROM memberships m WHERE m.workspace_id = p.workspace_id AND m.user_id = ?), p.workspace_id, p.created_at, p.id LIMIT 1`
)

// completeCaller fills in c, whose key and org are read, with the role,
// user, project and workspace it acts with.
func completeCaller(ctx context.Context, q db, c sbx.Caller) (sbx.Caller, error) {
	var query string
	var args []any
	var err error
	switch c.Key.Scope() {
	case "org":
		c.Role = sbx.RoleOwner
		query, args = readOrgKeyProject, []any{c.Org.ID}
	case "project":
		c.Role = sbx.RoleMember
		query, args = readProjectKeyProject, []any{c.Org.ID, c.Key.ProjectID}
	case "member":
		if c.User, err = getUser(ctx, q, c.Key.UserID); err != nil {
			return sbx.Caller{}, err
		}
		if c.Role, err = orgRole(ctx, q, c.Org.ID, c.User.ID); err != nil {
			return sbx.Caller{}, err
		}
		if c.Role == "" {
			return sbx.Caller{}, sbx.Errorf(sbx.EUnauthorized, "the API key's user %s is no longer a member of org %s", c.User.Email, c.Org.Name)
		}
		query, args = readMemberKeyProject, []any{c.Org.ID, c.User.ID, c.Org.ID, c.User.ID}
	}
	var projectCreated, wsCreated int64
	err = q.row(ctx, query, args...).
		Scan(&c.Project.ID, &c.Project.Name, &projectCreated, &c.Workspace.ID, &c.Workspace.Name, &wsCreated)
	if errors.Is(err, sql.ErrNoRows) && c.Key.Scope() == "project" {
		return sbx.Caller{}, sbx.Errorf(sbx.EUnauthorized, "the key's project %s does not exist in org %s", c.Key.ProjectID, c.Org.Name)
	}
	if err != nil {
		return sbx.Caller{}, err
	}
	c.Project.OrgID, c.Project.WorkspaceID, c.Project.CreatedAt = c.Org.ID, c.Workspace.ID, time.UnixMicro(projectCreated).UTC()
	c.Workspace.OrgID, c.Workspace.CreatedAt = c.Org.ID, time.UnixMicro(wsCreated).UTC()
	return c, nil
}

// Projects lists an org's projects.
func (s *Store) Projects(ctx context.Context, orgID string) ([]sbx.Project, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT id, workspace_id, name, created_at FROM projects WHERE org_id = ? ORDER BY created_at, id`, orgID)
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
