package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// Sessions: an agent's sessions on a workspace's runtimes, each with a
// transcript numbered from 1. A session names its runtime, never a sandbox,
// so it outlives them all. An append locks its session's row and numbers its
// messages after the session's last_seq, in one transaction: concurrent
// appends take turns, and seq has no gaps.

const sessionColumns = `id, org_id, workspace_id, runtime_id, title, created_by, created_at, updated_at`

func scanSession(row scanner) (sbx.Session, error) {
	var se sbx.Session
	var created, updated int64
	if err := row.Scan(&se.ID, &se.OrgID, &se.WorkspaceID, &se.RuntimeID, &se.Title, &se.CreatedBy, &created, &updated); err != nil {
		return se, err
	}
	se.CreatedAt, se.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return se, nil
}

// CreateSession starts a session on runtime runtimeID of a workspace of an
// org, made by createdBy (a user's ID, or for a key that acts for no user,
// the key's).
func (s *Store) CreateSession(ctx context.Context, orgID, workspaceID, runtimeID, title, createdBy string, now time.Time) (sbx.Session, error) {
	if err := checkText("title", title, sbx.MaxSessionTitleBytes); err != nil {
		return sbx.Session{}, err
	}
	se := sbx.Session{ID: uuid.NewString(), OrgID: orgID, WorkspaceID: workspaceID, RuntimeID: runtimeID, Title: title,
		CreatedBy: createdBy, CreatedAt: now, UpdatedAt: now}
	err := s.write(ctx, func(tx db) error {
		if _, err := getRuntime(ctx, tx, orgID, workspaceID, runtimeID); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `INSERT INTO sessions (id, org_id, workspace_id, runtime_id, title, created_by, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, se.ID, orgID, workspaceID, runtimeID, title, createdBy, now.UnixMicro(), now.UnixMicro())
		return err
	})
	if err != nil {
		return sbx.Session{}, err
	}
	return se, nil
}

// Sessions returns a page of a workspace's sessions, oldest first; with
// runtimeID, only that runtime's.
func (s *Store) Sessions(ctx context.Context, orgID, workspaceID, runtimeID string, p Page) ([]sbx.Session, string, error) {
	where, args, err := after(p, "created_at", "id")
	if err != nil {
		return nil, "", err
	}
	filter, head := "", []any{orgID, workspaceID}
	if runtimeID != "" {
		filter, head = "runtime_id = ? AND ", append(head, runtimeID)
	}
	rows, err := s.read(ctx).query(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE org_id = ? AND workspace_id = ? AND `+filter+where+`
		ORDER BY created_at, id LIMIT ?`, append(append(head, args...), limitOf(p)+1)...)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []sbx.Session
	for rows.Next() {
		se, err := scanSession(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, se)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	out, next := page(out, p, func(x sbx.Session) (time.Time, string) { return x.CreatedAt, x.ID })
	return out, next, nil
}

// GetSession finds session id in a workspace of an org.
func (s *Store) GetSession(ctx context.Context, orgID, workspaceID, id string) (sbx.Session, error) {
	return getSession(ctx, s.read(ctx), orgID, workspaceID, id)
}

func getSession(ctx context.Context, q db, orgID, workspaceID, id string) (sbx.Session, error) {
	se, err := scanSession(q.row(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ? AND org_id = ? AND workspace_id = ?`,
		id, orgID, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return se, sbx.Errorf(sbx.ENotFound, "session %s not found in this workspace", id)
	}
	return se, err
}

// AppendSessionMessages appends msgs (their roles and contents) to the
// transcript of session id, all of them or none, numbered after its last
// message, and returns them as recorded.
func (s *Store) AppendSessionMessages(ctx context.Context, orgID, workspaceID, id string, msgs []sbx.SessionMessage, now time.Time) ([]sbx.SessionMessage, error) {
	if err := checkMessages(msgs); err != nil {
		return nil, err
	}
	var out []sbx.SessionMessage
	err := s.write(ctx, func(tx db) error {
		var last int64
		err := tx.row(ctx, `SELECT last_seq FROM sessions WHERE id = ? AND org_id = ? AND workspace_id = ?`+tx.forUpdate(),
			id, orgID, workspaceID).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			return sbx.Errorf(sbx.ENotFound, "session %s not found in this workspace", id)
		}
		if err != nil {
			return err
		}
		out = make([]sbx.SessionMessage, len(msgs))
		for i, m := range msgs {
			out[i] = sbx.SessionMessage{Seq: last + 1 + int64(i), Role: m.Role, Content: m.Content, CreatedAt: now}
			if _, err := tx.exec(ctx, `INSERT INTO session_messages (session_id, seq, role, content, created_at) VALUES (?, ?, ?, ?, ?)`,
				id, out[i].Seq, m.Role, m.Content, now.UnixMicro()); err != nil {
				return err
			}
		}
		_, err = tx.exec(ctx, `UPDATE sessions SET last_seq = ?, updated_at = ? WHERE id = ?`, last+int64(len(msgs)), now.UnixMicro(), id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SessionMessages returns a page of the transcript of session id, by seq.
// The page's cursor is a seq: the page holds the messages after it, and the
// next cursor is the seq of its last message (empty on the last page).
func (s *Store) SessionMessages(ctx context.Context, orgID, workspaceID, id string, p Page) ([]sbx.SessionMessage, string, error) {
	var after int64
	if p.Cursor != "" {
		n, err := strconv.ParseInt(p.Cursor, 10, 64)
		if err != nil || n < 0 {
			return nil, "", sbx.Invalid("cursor", "cursor %q must be a message's seq, as next_cursor gives it", p.Cursor)
		}
		after = n
	}
	q := s.read(ctx)
	if _, err := getSession(ctx, q, orgID, workspaceID, id); err != nil {
		return nil, "", err
	}
	rows, err := q.query(ctx, `SELECT seq, role, content, created_at FROM session_messages WHERE session_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`, id, after, limitOf(p)+1)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []sbx.SessionMessage
	for rows.Next() {
		var m sbx.SessionMessage
		var created int64
		if err := rows.Scan(&m.Seq, &m.Role, &m.Content, &created); err != nil {
			return nil, "", err
		}
		m.CreatedAt = time.UnixMicro(created).UTC()
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if len(out) <= limitOf(p) {
		return out, "", nil
	}
	out = out[:limitOf(p)]
	return out, strconv.FormatInt(out[len(out)-1].Seq, 10), nil
}

// checkMessages refuses an append of no messages or too many, or with a
// message whose role is not one of sbx.SessionRoles or whose content is too
// long; the error names each bad field.
func checkMessages(msgs []sbx.SessionMessage) error {
	if len(msgs) == 0 || len(msgs) > sbx.MaxSessionAppend {
		return sbx.Invalid("messages", "messages must hold 1 to %d messages, not %d", sbx.MaxSessionAppend, len(msgs))
	}
	var p sbx.Problems
	for i, m := range msgs {
		field := fmt.Sprintf("messages[%d]", i)
		if !sbx.ValidSessionRole(m.Role) {
			p.Add(field+".role", "%s.role %q must be one of %s", field, m.Role, strings.Join(sbx.SessionRoles, ", "))
		}
		if err := checkText(field+".content", m.Content, sbx.MaxSessionMessageBytes); err != nil {
			p = append(p, err.Fields...)
		}
	}
	return p.Err()
}

// checkText refuses text in field that is longer than max bytes, not UTF-8,
// or holds a NUL (which PostgreSQL's text cannot).
func checkText(field, text string, max int) *sbx.Error {
	switch {
	case len(text) > max:
		return sbx.Invalid(field, "%s is longer than %d bytes", field, max)
	case !utf8.ValidString(text):
		return sbx.Invalid(field, "%s is not valid UTF-8", field)
	case strings.ContainsRune(text, 0):
		return sbx.Invalid(field, "%s holds a NUL character, which sbx does not store", field)
	}
	return nil
}
