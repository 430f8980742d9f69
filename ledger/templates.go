package ledger

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
)

const projectTemplateColumns = `id, org_id, workspace_id, project_id, name, recipe, version, created_at, updated_at, deleted_at`

const buildColumns = `id, template_id, org_id, state, step, steps, sandbox_id, version, error, created_at, started_at, finished_at`

// InsertTemplateBuild records a build of t: t itself first when it is new
// (a live template of the same name in its project is a 409), else its
// recipe, as the build takes it.
func (s *Store) InsertTemplateBuild(ctx context.Context, t sbx.ProjectTemplate, b sbx.TemplateBuild) error {
	return s.write(ctx, func(tx db) error {
		res, err := tx.exec(ctx, `UPDATE project_templates SET recipe = ?, updated_at = ? WHERE id = ? AND deleted_at = 0`,
			string(t.Recipe), t.UpdatedAt.UnixMicro(), t.ID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			_, err = tx.exec(ctx, `INSERT INTO project_templates (`+projectTemplateColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
				t.ID, t.OrgID, t.WorkspaceID, t.ProjectID, t.Name, string(t.Recipe), t.Version, t.CreatedAt.UnixMicro(), t.UpdatedAt.UnixMicro())
			if isUniqueViolation(err) {
				return sbx.Errorf(sbx.EConflict, "a template named %s already exists in this project", t.Name)
			}
			if err != nil {
				return err
			}
		}
		if n, err := openBuilds(ctx, tx, t.ID); err != nil || n > 0 {
			if err == nil {
				err = sbx.Errorf(sbx.EConflict, "template %s is being built; wait for that build to end", t.Name)
			}
			return err
		}
		_, err = tx.exec(ctx, `INSERT INTO template_builds (`+buildColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)`,
			b.ID, b.TemplateID, b.OrgID, string(b.State), b.Step, b.Steps, b.SandboxID, b.Version, b.Error, b.CreatedAt.UnixMicro())
		if err != nil {
			return err
		}
		return buildEvent(ctx, tx, b, b.CreatedAt)
	})
}

func openBuilds(ctx context.Context, tx db, templateID string) (int, error) {
	var n int
	err := tx.row(ctx, `SELECT COUNT(*) FROM template_builds WHERE template_id = ? AND state IN ('queued', 'building')`, templateID).Scan(&n)
	return n, err
}

// GetProjectTemplate finds a live template of org by its ID, or by its
// name in project.
func (s *Store) GetProjectTemplate(ctx context.Context, orgID, projectID, ref string) (sbx.ProjectTemplate, error) {
	q, args := `SELECT `+projectTemplateColumns+` FROM project_templates WHERE org_id = ? AND id = ? AND deleted_at = 0`, []any{orgID, ref}
	if !strings.HasPrefix(ref, sbx.TemplateIDPrefix) {
		q, args = `SELECT `+projectTemplateColumns+` FROM project_templates WHERE org_id = ? AND project_id = ? AND name = ? AND deleted_at = 0`, []any{orgID, projectID, ref}
	}
	t, err := scanProjectTemplate(s.read(ctx).row(ctx, q, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return t, sbx.Errorf(sbx.ENotFound, "template %s does not exist on this server", ref)
	}
	return t, err
}

// ProjectTemplates lists org's live templates (of one project, when
// projectID is set), by name.
func (s *Store) ProjectTemplates(ctx context.Context, orgID, projectID string) ([]sbx.ProjectTemplate, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+projectTemplateColumns+` FROM project_templates
		WHERE org_id = ? AND (project_id = ? OR ? = '') AND deleted_at = 0 ORDER BY name, id`, orgID, projectID, projectID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []sbx.ProjectTemplate{}
	for rows.Next() {
		t, err := scanProjectTemplate(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// SetTemplateVersion makes version the one creates of template id start
// from.
func (s *Store) SetTemplateVersion(ctx context.Context, id, version string, now time.Time) error {
	return s.write(ctx, func(tx db) error {
		_, err := tx.exec(ctx, `UPDATE project_templates SET version = ?, updated_at = ? WHERE id = ?`, version, now.UnixMicro(), id)
		return err
	})
}

// DeleteProjectTemplate marks template id deleted: its name is free again.
func (s *Store) DeleteProjectTemplate(ctx context.Context, id string, now time.Time) error {
	return s.write(ctx, func(tx db) error {
		if n, err := openBuilds(ctx, tx, id); err != nil || n > 0 {
			if err == nil {
				err = sbx.Errorf(sbx.EConflict, "template %s is being built; delete it once that build ends", id)
			}
			return err
		}
		_, err := tx.exec(ctx, `UPDATE project_templates SET deleted_at = ?, updated_at = ? WHERE id = ? AND deleted_at = 0`, now.UnixMicro(), now.UnixMicro(), id)
		return err
	})
}

// GetTemplateBuild finds a build of org.
func (s *Store) GetTemplateBuild(ctx context.Context, orgID, id string) (sbx.TemplateBuild, error) {
	b, err := scanBuild(s.read(ctx).row(ctx, `SELECT `+buildColumns+` FROM template_builds WHERE id = ? AND (org_id = ? OR ? = '')`, id, orgID, orgID))
	if errors.Is(err, sql.ErrNoRows) {
		return b, sbx.Errorf(sbx.ENotFound, "build %s not found", id)
	}
	return b, err
}

// TemplateBuilds lists a template's builds, newest first.
func (s *Store) TemplateBuilds(ctx context.Context, templateID string) ([]sbx.TemplateBuild, error) {
	return s.builds(ctx, `SELECT `+buildColumns+` FROM template_builds WHERE template_id = ? ORDER BY created_at DESC, id DESC`, templateID)
}

// OpenTemplateBuilds lists the builds that are queued or building, in
// every org: what reconcile ends after a restart.
func (s *Store) OpenTemplateBuilds(ctx context.Context) ([]sbx.TemplateBuild, error) {
	return s.builds(ctx, `SELECT `+buildColumns+` FROM template_builds WHERE state IN ('queued', 'building') ORDER BY created_at, id`)
}

func (s *Store) builds(ctx context.Context, q string, args ...any) ([]sbx.TemplateBuild, error) {
	rows, err := s.read(ctx).query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []sbx.TemplateBuild{}
	for rows.Next() {
		b, err := scanBuild(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// UpdateTemplateBuild loads build id, lets fn change it and writes it, in
// one transaction; a build that has ended is not changed again (409).
func (s *Store) UpdateTemplateBuild(ctx context.Context, id string, fn func(*sbx.TemplateBuild) error) (sbx.TemplateBuild, error) {
	var b sbx.TemplateBuild
	err := s.write(ctx, func(tx db) error {
		var err error
		if b, err = scanBuild(tx.row(ctx, `SELECT `+buildColumns+` FROM template_builds WHERE id = ?`+tx.forUpdateIf(true), id)); err != nil {
			return err
		}
		if b.State == sbx.BuildReady || b.State == sbx.BuildFailed {
			return sbx.Errorf(sbx.EConflict, "build %s has ended (%s)", id, b.State)
		}
		before := b.State
		if err := fn(&b); err != nil {
			return err
		}
		_, err = tx.exec(ctx, `UPDATE template_builds SET state = ?, step = ?, steps = ?, sandbox_id = ?, version = ?, error = ?, started_at = ?, finished_at = ? WHERE id = ?`,
			string(b.State), b.Step, b.Steps, b.SandboxID, b.Version, b.Error, micros0(b.StartedAt), micros0(b.FinishedAt), id)
		if err != nil || b.State == before {
			return err
		}
		return buildEvent(ctx, tx, b, buildChangedAt(b))
	})
	return b, err
}

// AppendBuildLog adds lines to build id's log, numbered after its last.
func (s *Store) AppendBuildLog(ctx context.Context, id string, at time.Time, lines ...string) error {
	return s.write(ctx, func(tx db) error {
		var last int64
		if err := tx.row(ctx, `SELECT COALESCE(MAX(seq), 0) FROM template_build_logs WHERE build_id = ?`, id).Scan(&last); err != nil {
			return err
		}
		for i, text := range lines {
			if _, err := tx.exec(ctx, `INSERT INTO template_build_logs (build_id, seq, at, text) VALUES (?, ?, ?, ?)`,
				id, last+int64(i)+1, at.UnixMicro(), text); err != nil {
				return err
			}
		}
		return nil
	})
}

// BuildLog is build id's log after line after, at most limit lines.
func (s *Store) BuildLog(ctx context.Context, id string, after int64, limit int) ([]sbx.BuildLogLine, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT seq, at, text FROM template_build_logs WHERE build_id = ? AND seq > ? ORDER BY seq LIMIT ?`, id, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []sbx.BuildLogLine{}
	for rows.Next() {
		var l sbx.BuildLogLine
		var at int64
		if err := rows.Scan(&l.Seq, &at, &l.Text); err != nil {
			return nil, err
		}
		l.At = time.UnixMicro(at).UTC()
		out = append(out, l)
	}
	return out, rows.Err()
}

func scanProjectTemplate(row scanner) (sbx.ProjectTemplate, error) {
	var t sbx.ProjectTemplate
	var recipe string
	var created, updated, deleted int64
	err := row.Scan(&t.ID, &t.OrgID, &t.WorkspaceID, &t.ProjectID, &t.Name, &recipe, &t.Version, &created, &updated, &deleted)
	t.Recipe, t.CreatedAt, t.UpdatedAt, t.DeletedAt = []byte(recipe), time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC(), from0(deleted)
	return t, err
}

func scanBuild(row scanner) (sbx.TemplateBuild, error) {
	var b sbx.TemplateBuild
	var state string
	var created, started, finished int64
	err := row.Scan(&b.ID, &b.TemplateID, &b.OrgID, &state, &b.Step, &b.Steps, &b.SandboxID, &b.Version, &b.Error, &created, &started, &finished)
	b.State, b.CreatedAt, b.StartedAt, b.FinishedAt = sbx.BuildState(state), time.UnixMicro(created).UTC(), from0(started), from0(finished)
	return b, err
}

// micros0 and from0 are micros and fromMicros for columns where 0, not
// NULL, is the zero time.
// buildChangedAt is when build b last changed state, as far as its row
// says: when it finished, else started, else was made.
func buildChangedAt(b sbx.TemplateBuild) time.Time {
	switch {
	case !b.FinishedAt.IsZero():
		return b.FinishedAt
	case !b.StartedAt.IsZero():
		return b.StartedAt
	}
	return b.CreatedAt
}

func micros0(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func from0(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}

// SetTemplateTag points tag of template templateID (a name of the
// server's own, or a project's ID) at version.
func (s *Store) SetTemplateTag(ctx context.Context, templateID, tag, version string, now time.Time) error {
	return s.write(ctx, func(tx db) error {
		res, err := tx.exec(ctx, `UPDATE template_tags SET version = ?, updated_at = ? WHERE template_id = ? AND tag = ?`, version, now.UnixMicro(), templateID, tag)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			_, err = tx.exec(ctx, `INSERT INTO template_tags (template_id, tag, version, updated_at) VALUES (?, ?, ?, ?)`, templateID, tag, version, now.UnixMicro())
		}
		return err
	})
}

// DeleteTemplateTags removes tags of templateID: the named ones, or all
// when none is named; naming one that does not exist is a 404.
func (s *Store) DeleteTemplateTags(ctx context.Context, templateID string, tags ...string) error {
	return s.write(ctx, func(tx db) error {
		if len(tags) == 0 {
			_, err := tx.exec(ctx, `DELETE FROM template_tags WHERE template_id = ?`, templateID)
			return err
		}
		for _, tag := range tags {
			res, err := tx.exec(ctx, `DELETE FROM template_tags WHERE template_id = ? AND tag = ?`, templateID, tag)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return sbx.Errorf(sbx.ENotFound, "template %s has no tag %s", templateID, tag)
			}
		}
		return nil
	})
}

// TemplateTags maps each tag of templateID to the version it names.
func (s *Store) TemplateTags(ctx context.Context, templateID string) (map[string]string, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT tag, version FROM template_tags WHERE template_id = ? ORDER BY tag`, templateID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var tag, version string
		if err := rows.Scan(&tag, &version); err != nil {
			return nil, err
		}
		out[tag] = version
	}
	return out, rows.Err()
}
