package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// CreateWorkspace creates a workspace of an org with a project named
// "default" and its runtime. When creatorID is not empty, that user becomes
// a member of the new workspace with role.
func (s *Store) CreateWorkspace(ctx context.Context, orgID, name, creatorID string, role sbx.Role, now time.Time) (sbx.Workspace, sbx.Project, error) {
	if err := checkName("workspace", name); err != nil {
		return sbx.Workspace{}, sbx.Project{}, err
	}
	var ws sbx.Workspace
	var p sbx.Project
	err := s.write(ctx, func(tx db) error {
		var err error
		if ws, p, _, err = insertWorkspace(ctx, tx, orgID, name, now); err != nil {
			return err
		}
		if creatorID == "" {
			return nil
		}
		_, err = tx.exec(ctx, `INSERT INTO memberships (org_id, workspace_id, user_id, role, created_at) VALUES (?, ?, ?, ?, ?)`,
			orgID, ws.ID, creatorID, string(role), now.UnixMicro())
		return err
	})
	return ws, p, err
}

// insertWorkspace records a workspace with its default project and runtime.
func insertWorkspace(ctx context.Context, tx db, orgID, name string, now time.Time) (sbx.Workspace, sbx.Project, sbx.Runtime, error) {
	ws := sbx.Workspace{ID: uuid.NewString(), OrgID: orgID, Name: name, CreatedAt: now}
	_, err := tx.exec(ctx, `INSERT INTO workspaces (id, org_id, name, created_at) VALUES (?, ?, ?, ?)`, ws.ID, orgID, name, now.UnixMicro())
	if isUniqueViolation(err) {
		return ws, sbx.Project{}, sbx.Runtime{}, sbx.Errorf(sbx.EConflict, "workspace %q already exists", name)
	}
	if err != nil {
		return ws, sbx.Project{}, sbx.Runtime{}, err
	}
	p, rt, err := insertProject(ctx, tx, ws, "default", now)
	return ws, p, rt, err
}

// insertProject records a project of ws and its runtime, idle.
func insertProject(ctx context.Context, tx db, ws sbx.Workspace, name string, now time.Time) (sbx.Project, sbx.Runtime, error) {
	p := sbx.Project{ID: uuid.NewString(), OrgID: ws.OrgID, WorkspaceID: ws.ID, Name: name, CreatedAt: now}
	_, err := tx.exec(ctx, `INSERT INTO projects (id, org_id, workspace_id, name, created_at) VALUES (?, ?, ?, ?, ?)`,
		p.ID, p.OrgID, p.WorkspaceID, p.Name, now.UnixMicro())
	if isUniqueViolation(err) {
		return p, sbx.Runtime{}, sbx.Errorf(sbx.EConflict, "project %q already exists in workspace %s", name, ws.Name)
	}
	if err != nil {
		return p, sbx.Runtime{}, err
	}
	rt := sbx.Runtime{ID: uuid.NewString(), OrgID: p.OrgID, WorkspaceID: p.WorkspaceID, ProjectID: p.ID, Status: sbx.RuntimeIdle,
		Config: sbx.RuntimeConfig{TemplateID: defaultRuntimeTemplate}, CreatedAt: now, UpdatedAt: now}
	_, err = tx.exec(ctx, `INSERT INTO runtimes (id, org_id, workspace_id, project_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
		rt.ID, rt.OrgID, rt.WorkspaceID, rt.ProjectID, now.UnixMicro(), now.UnixMicro())
	p.RuntimeID = rt.ID
	return p, rt, err
}

// Workspaces returns a page of the workspaces of an org within reach,
// oldest first.
func (s *Store) Workspaces(ctx context.Context, orgID string, reach sbx.Reach, p Page) ([]sbx.Workspace, string, error) {
	where, args, err := after(p, "created_at", "id")
	if err != nil {
		return nil, "", err
	}
	within, withinArgs := reachClause(reach, "id", "")
	rows, err := s.read(ctx).query(ctx, `SELECT id, name, created_at FROM workspaces WHERE org_id = ? AND `+within+where+`
		ORDER BY created_at, id LIMIT ?`, append(append(append([]any{orgID}, withinArgs...), args...), limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []sbx.Workspace
	for rows.Next() {
		ws := sbx.Workspace{OrgID: orgID}
		var created int64
		if err := rows.Scan(&ws.ID, &ws.Name, &created); err != nil {
			return nil, "", err
		}
		ws.CreatedAt = time.UnixMicro(created).UTC()
		out = append(out, ws)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(w sbx.Workspace) (time.Time, string) { return w.CreatedAt, w.ID })
	return out, next, nil
}

// reachClause is the condition (each ending in " AND ") that keeps rows
// within reach, given the column holding a row's workspace and, for rows
// that are projects, the one holding its project ("": the row's workspace
// is the project's).
func reachClause(reach sbx.Reach, workspaceCol, projectCol string) (string, []any) {
	var where string
	var args []any
	if reach.UserID != "" {
		where, args = workspaceCol+" IN (SELECT workspace_id FROM memberships WHERE user_id = ?) AND ", append(args, reach.UserID)
	}
	switch {
	case reach.ProjectID == "":
	case projectCol != "":
		where, args = where+projectCol+" = ? AND ", append(args, reach.ProjectID)
	default:
		where, args = where+workspaceCol+" IN (SELECT workspace_id FROM projects WHERE id = ?) AND ", append(args, reach.ProjectID)
	}
	return where, args
}

// GetProject finds a project of an org by its ID.
func (s *Store) GetProject(ctx context.Context, orgID, id string) (sbx.Project, error) {
	p := sbx.Project{OrgID: orgID}
	var created int64
	err := s.read(ctx).row(ctx, `SELECT p.id, p.workspace_id, p.name, p.created_at, r.id FROM projects p JOIN runtimes r ON r.project_id = p.id
		WHERE p.org_id = ? AND p.id = ?`, orgID, id).Scan(&p.ID, &p.WorkspaceID, &p.Name, &created, &p.RuntimeID)
	if errors.Is(err, sql.ErrNoRows) {
		return p, sbx.Errorf(sbx.ENotFound, "project %s not found", id)
	}
	p.CreatedAt = time.UnixMicro(created).UTC()
	return p, err
}

// GetWorkspace finds a workspace of an org by its ID or its name.
func (s *Store) GetWorkspace(ctx context.Context, orgID, ref string) (sbx.Workspace, error) {
	return getWorkspace(ctx, s.read(ctx), orgID, ref)
}

func getWorkspace(ctx context.Context, q db, orgID, ref string) (sbx.Workspace, error) {
	ws := sbx.Workspace{OrgID: orgID}
	var created int64
	err := q.row(ctx, `SELECT id, name, created_at FROM workspaces WHERE org_id = ? AND (id = ? OR name = ?)`, orgID, ref, ref).
		Scan(&ws.ID, &ws.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return ws, sbx.Errorf(sbx.ENotFound, "workspace %s not found", ref)
	}
	ws.CreatedAt = time.UnixMicro(created).UTC()
	return ws, err
}

// CreateProject creates a project in a workspace of an org, with its runtime.
func (s *Store) CreateProject(ctx context.Context, orgID, workspaceID, name string, now time.Time) (sbx.Project, sbx.Runtime, error) {
	if err := checkName("project", name); err != nil {
		return sbx.Project{}, sbx.Runtime{}, err
	}
	var p sbx.Project
	var rt sbx.Runtime
	err := s.write(ctx, func(tx db) error {
		ws, err := getWorkspace(ctx, tx, orgID, workspaceID)
		if err != nil {
			return err
		}
		p, rt, err = insertProject(ctx, tx, ws, name, now)
		return err
	})
	return p, rt, err
}

// WorkspaceProjects returns a page of a workspace's projects within reach,
// oldest first, each with its runtime's ID.
func (s *Store) WorkspaceProjects(ctx context.Context, orgID, workspaceID string, reach sbx.Reach, p Page) ([]sbx.Project, string, error) {
	where, args, err := after(p, "p.created_at", "p.id")
	if err != nil {
		return nil, "", err
	}
	within, withinArgs := reachClause(reach, "p.workspace_id", "p.id")
	rows, err := s.read(ctx).query(ctx, `SELECT p.id, p.name, p.created_at, r.id FROM projects p JOIN runtimes r ON r.project_id = p.id
		WHERE p.org_id = ? AND p.workspace_id = ? AND `+within+where+` ORDER BY p.created_at, p.id LIMIT ?`,
		append(append(append([]any{orgID, workspaceID}, withinArgs...), args...), limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []sbx.Project
	for rows.Next() {
		pr := sbx.Project{OrgID: orgID, WorkspaceID: workspaceID}
		var created int64
		if err := rows.Scan(&pr.ID, &pr.Name, &created, &pr.RuntimeID); err != nil {
			return nil, "", err
		}
		pr.CreatedAt = time.UnixMicro(created).UTC()
		out = append(out, pr)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(x sbx.Project) (time.Time, string) { return x.CreatedAt, x.ID })
	return out, next, nil
}
