package ledger

import (
	"context"
	"database/sql"
	"errors"
	"net/mail"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// MemberCount is sbx.MemberCount.
type MemberCount = sbx.MemberCount

const userColumns = `u.id, u.email, u.name, u.kyc_status, u.created_at`

func scanUser(u *sbx.User) ([]any, func()) {
	var kyc string
	var created int64
	return []any{&u.ID, &u.Email, &u.Name, &kyc, &created}, func() {
		u.KYCStatus, u.CreatedAt = sbx.KYCStatus(kyc), time.UnixMicro(created).UTC()
	}
}

// GetUser finds a user by ID or email.
func (s *Store) GetUser(ctx context.Context, ref string) (sbx.User, error) {
	return getUser(ctx, s.read(ctx), ref)
}

func getUser(ctx context.Context, q db, ref string) (sbx.User, error) {
	var u sbx.User
	dest, finish := scanUser(&u)
	err := q.row(ctx, readUser, ref, strings.ToLower(ref)).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return u, sbx.Errorf(sbx.ENotFound, "user %s not found", ref)
	}
	finish()
	return u, err
}

// SetUserKYC records the verification state of the user ref (ID or email)
// decided at at; with ifLater, as SetOrgKYC, not when a later one is recorded.
func (s *Store) SetUserKYC(ctx context.Context, ref string, status sbx.KYCStatus, at time.Time, ifLater bool) (u sbx.User, applied bool, err error) {
	if !status.Valid() {
		return sbx.User{}, false, sbx.Invalid("status", "status %q must be unverified, pending or verified", status)
	}
	err = s.write(ctx, func(tx db) error {
		if u, err = getUser(ctx, tx, ref); err != nil {
			return err
		}
		if applied, err = setKYC(ctx, tx, "users", u.ID, status, at, ifLater); applied {
			u.KYCStatus = status
		}
		return err
	})
	return u, applied, err
}

// AddMember makes the user with email (created, unverified, when new) a
// member of a workspace of an org with role, and counts the workspace's
// members against the org's plan. It locks the org's row, so that it takes
// turns with the admissions that check the member limit.
func (s *Store) AddMember(ctx context.Context, orgID, workspaceID, email, name string, role sbx.Role, now time.Time) (sbx.Member, MemberCount, error) {
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || addr.Name != "" {
		return sbx.Member{}, MemberCount{}, sbx.Invalid("email", "email %q is not an address such as ada@example.com", email)
	}
	email = strings.ToLower(email)
	if !role.Valid() {
		return sbx.Member{}, MemberCount{}, sbx.Invalid("role", "role %q must be owner, admin or member", role)
	}
	m := sbx.Member{OrgID: orgID, Role: role, CreatedAt: now}
	var count MemberCount
	err = s.write(ctx, func(tx db) error {
		org, err := getOrg(ctx, tx, orgID, true)
		if err != nil {
			return err
		}
		ws, err := getWorkspace(ctx, tx, orgID, workspaceID)
		if err != nil {
			return err
		}
		m.WorkspaceID = ws.ID
		m.User, err = getUser(ctx, tx, email)
		if sbx.ErrorCode(err) == sbx.ENotFound {
			m.User = sbx.User{ID: uuid.NewString(), Email: email, Name: name, KYCStatus: sbx.KYCUnverified, CreatedAt: now}
			_, err = tx.exec(ctx, `INSERT INTO users (id, email, name, kyc_status, created_at) VALUES (?, ?, ?, ?, ?)`,
				m.User.ID, email, name, string(sbx.KYCUnverified), now.UnixMicro())
			if isUniqueViolation(err) {
				return sbx.Errorf(sbx.EConflict, "user %s was being added by another request at the same time; try again", email)
			}
		}
		if err != nil {
			return err
		}
		_, err = tx.exec(ctx, `INSERT INTO memberships (org_id, workspace_id, user_id, role, created_at) VALUES (?, ?, ?, ?, ?)`,
			orgID, ws.ID, m.User.ID, string(role), now.UnixMicro())
		if isUniqueViolation(err) {
			return sbx.Errorf(sbx.EConflict, "%s is already a member of workspace %s", email, ws.Name)
		}
		if err != nil {
			return err
		}
		count, err = countMembers(ctx, tx, ws.ID, org.Plan)
		return err
	})
	return m, count, err
}

// RemoveMember ends the membership of the user ref (ID or email) of a
// workspace of an org and counts the workspace's members left.
func (s *Store) RemoveMember(ctx context.Context, orgID, workspaceID, ref string) (sbx.Member, MemberCount, error) {
	var m sbx.Member
	var count MemberCount
	err := s.write(ctx, func(tx db) error {
		org, err := getOrg(ctx, tx, orgID, true)
		if err != nil {
			return err
		}
		ws, err := getWorkspace(ctx, tx, orgID, workspaceID)
		if err != nil {
			return err
		}
		if m, err = getMember(ctx, tx, ws, ref); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM memberships WHERE workspace_id = ? AND user_id = ?`, ws.ID, m.User.ID); err != nil {
			return err
		}
		count, err = countMembers(ctx, tx, ws.ID, org.Plan)
		return err
	})
	return m, count, err
}

// GetMember finds the membership of the user ref (ID or email) of a
// workspace of an org.
func (s *Store) GetMember(ctx context.Context, orgID, workspaceID, ref string) (sbx.Member, error) {
	q := s.read(ctx)
	ws, err := getWorkspace(ctx, q, orgID, workspaceID)
	if err != nil {
		return sbx.Member{}, err
	}
	return getMember(ctx, q, ws, ref)
}

func getMember(ctx context.Context, q db, ws sbx.Workspace, ref string) (sbx.Member, error) {
	m := sbx.Member{OrgID: ws.OrgID, WorkspaceID: ws.ID}
	dest, finish := scanUser(&m.User)
	var role string
	var created int64
	err := q.row(ctx, `SELECT `+userColumns+`, m.role, m.created_at FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE m.workspace_id = ? AND (u.id = ? OR u.email = ?)`, ws.ID, ref, strings.ToLower(ref)).Scan(append(dest, &role, &created)...)
	if errors.Is(err, sql.ErrNoRows) {
		return m, sbx.Errorf(sbx.ENotFound, "%s is not a member of workspace %s", ref, ws.Name)
	}
	if err != nil {
		return m, err
	}
	finish()
	m.Role, m.CreatedAt = sbx.Role(role), time.UnixMicro(created).UTC()
	return m, nil
}

func countMembers(ctx context.Context, q db, workspaceID string, plan sbx.Plan) (MemberCount, error) {
	c := MemberCount{Max: plan.MaxMembers}
	err := q.row(ctx, `SELECT count(*) FROM memberships WHERE workspace_id = ?`, workspaceID).Scan(&c.Members)
	return c, err
}

// MemberCounts counts the members of every workspace of an org against its plan.
func (s *Store) MemberCounts(ctx context.Context, orgID string) (map[string]MemberCount, error) {
	org, err := s.GetOrg(ctx, orgID)
	if err != nil {
		return nil, err
	}
	rows, err := s.read(ctx).query(ctx, `SELECT w.id, (SELECT count(*) FROM memberships m WHERE m.workspace_id = w.id)
		FROM workspaces w WHERE w.org_id = ?`, org.ID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]MemberCount{}
	for rows.Next() {
		var id string
		c := MemberCount{Max: org.Plan.MaxMembers}
		if err := rows.Scan(&id, &c.Members); err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, rows.Err()
}

// Members returns a page of a workspace's members, by when they joined.
func (s *Store) Members(ctx context.Context, orgID, workspaceID string, p Page) ([]sbx.Member, string, error) {
	where, args, err := after(p, "m.created_at", "m.user_id")
	if err != nil {
		return nil, "", err
	}
	rows, err := s.read(ctx).query(ctx, `SELECT `+userColumns+`, m.role, m.created_at FROM memberships m JOIN users u ON u.id = m.user_id
		WHERE m.org_id = ? AND m.workspace_id = ? AND `+where+` ORDER BY m.created_at, m.user_id LIMIT ?`,
		append(append([]any{orgID, workspaceID}, args...), limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []sbx.Member
	for rows.Next() {
		m := sbx.Member{OrgID: orgID, WorkspaceID: workspaceID}
		dest, finish := scanUser(&m.User)
		var role string
		var created int64
		if err := rows.Scan(append(dest, &role, &created)...); err != nil {
			return nil, "", err
		}
		finish()
		m.Role, m.CreatedAt = sbx.Role(role), time.UnixMicro(created).UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(m sbx.Member) (time.Time, string) { return m.CreatedAt, m.User.ID })
	return out, next, nil
}

// Memberships lists a user's memberships of an org's workspaces, with their
// workspaces' names, oldest first.
func (s *Store) Memberships(ctx context.Context, orgID, userID string) ([]sbx.Member, error) {
	q := s.read(ctx)
	rows, err := q.query(ctx, `SELECT m.workspace_id, w.name, m.role, m.created_at FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
		WHERE m.org_id = ? AND m.user_id = ? ORDER BY m.created_at, m.workspace_id`+q.forShare(), orgID, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sbx.Member
	for rows.Next() {
		m := sbx.Member{OrgID: orgID, User: sbx.User{ID: userID}}
		var role string
		var created int64
		if err := rows.Scan(&m.WorkspaceID, &m.WorkspaceName, &role, &created); err != nil {
			return nil, err
		}
		m.Role, m.CreatedAt = sbx.Role(role), time.UnixMicro(created).UTC()
		out = append(out, m)
	}
	return out, rows.Err()
}

// MemberRole is a user's role in one workspace; "" when not a member.
// Within Atomically the membership stays as read until the commit.
func (s *Store) MemberRole(ctx context.Context, workspaceID, userID string) (sbx.Role, error) {
	var role string
	q := s.read(ctx)
	err := q.row(ctx, `SELECT role FROM memberships WHERE workspace_id = ? AND user_id = ?`+q.forShare(), workspaceID, userID).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return sbx.Role(role), err
}

// readUser and readOrgRoles are getUser's and orgRole's, which every
// request with a member's key makes (hotReads).
var (
	readUser     = `SELECT ` + userColumns + ` FROM users u WHERE u.id = ? OR u.email = ?`
	readOrgRoles = `SELECT DISTINCT role FROM memberships WHERE org_id = ? AND user_id = ?`
)

// orgRole is a user's highest role in the workspaces of an org; "" when the
// user is a member of none.
func orgRole(ctx context.Context, q db, orgID, userID string) (sbx.Role, error) {
	rows, err := q.query(ctx, readOrgRoles, orgID, userID)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var best sbx.Role
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return "", err
		}
		if role := sbx.Role(r); !best.AtLeast(role) {
			best = role
		}
	}
	return best, rows.Err()
}

// OrgRole is a user's highest role in the workspaces of an org; "" when the
// user is a member of none.
func (s *Store) OrgRole(ctx context.Context, orgID, userID string) (sbx.Role, error) {
	return orgRole(ctx, s.read(ctx), orgID, userID)
}
