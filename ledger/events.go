package ledger

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
)

// An org's event log (migration 0019): appendOrgEvent, called by every
// write path whose change is an event, in that write's transaction; the
// reads that replay it; its retention; and the bell that tells followers in
// this process that events were committed.

// appendOrgEvent appends e to its org's log in tx, numbering it with the
// org's next seq: the counter row's update locks it until tx ends, so on
// PostgreSQL a second append for the org waits, and seqs commit in order.
func appendOrgEvent(ctx context.Context, tx db, e sbx.OrgEvent) error {
	if e.OrgID == "" {
		return nil // a row of no org (none today) has no log
	}
	if len(e.Data) == 0 {
		e.Data = []byte(`{}`)
	}
	err := tx.row(ctx, `INSERT INTO org_event_seqs (org_id, last) VALUES (?, 1)
		ON CONFLICT (org_id) DO UPDATE SET last = org_event_seqs.last + 1 RETURNING last`, e.OrgID).Scan(&e.Seq)
	if err != nil {
		return err
	}
	_, err = tx.exec(ctx, `INSERT INTO org_events (org_id, seq, at, type, workspace_id, project_id, sandbox_id, subject, data)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.OrgID, e.Seq, e.At.UnixMicro(), e.Type, e.WorkspaceID, e.ProjectID, e.SandboxID, e.Subject, string(e.Data))
	if err == nil && tx.appended != nil {
		*tx.appended = true
	}
	return err
}

// sandboxEvent is the org event of a sandbox's timeline step.
func sandboxEvent(sb sbx.Sandbox, e sbx.Event) sbx.OrgEvent {
	data := map[string]any{"step": e.Step, "state": string(sb.State), "sandboxID": sb.ProviderSandboxID, "provider": sb.Provider}
	if e.Detail != "" {
		data["detail"] = e.Detail
	}
	if sb.PauseReason != "" {
		data["pauseReason"] = string(sb.PauseReason)
	}
	if sb.EndReason != "" {
		data["endReason"] = string(sb.EndReason)
	}
	return sbx.OrgEvent{OrgID: sb.OrgID, At: e.At, Type: "sandbox." + e.Step, WorkspaceID: sb.WorkspaceID, ProjectID: sb.ProjectID,
		SandboxID: sb.ID, Subject: sb.ProviderSandboxID, Data: sbx.EventData(data)}
}

// EventFilter is sbx.EventFilter.
type EventFilter = sbx.EventFilter

// MaxEventPage is the most events one read of OrgEvents answers.
const MaxEventPage = sbx.MaxEventPage

// OrgEvents answers an org's events after f.After that f keeps and reach
// sees, oldest first. An org's own events (no workspace: credits) are
// seen only by callers that reach the whole org.
func (s *Store) OrgEvents(ctx context.Context, orgID string, reach sbx.Reach, f EventFilter) ([]sbx.OrgEvent, error) {
	if f.Limit <= 0 || f.Limit > MaxEventPage {
		f.Limit = MaxEventPage
	}
	where, args := reachClause(reach, "workspace_id", "project_id")
	where += "org_id = ? AND seq > ?"
	args = append(args, orgID, f.After)
	if f.Sandbox != "" {
		where, args = where+" AND sandbox_id <> '' AND (sandbox_id = ? OR subject = ?)", append(args, f.Sandbox, f.Sandbox)
	}
	if f.Project != "" {
		where, args = where+" AND project_id = ?", append(args, f.Project)
	}
	if len(f.Types) > 0 && !matchesAll(f.Types) {
		var ors []string
		for _, t := range f.Types {
			if base, ok := strings.CutSuffix(t, ".*"); ok {
				ors, args = append(ors, "substr(type, 1, ?) = ?"), append(args, len(base)+1, base+".")
			} else {
				ors, args = append(ors, "type = ?"), append(args, t)
			}
		}
		where += " AND (" + strings.Join(ors, " OR ") + ")"
	}
	rows, err := s.read(ctx).query(ctx, `SELECT org_id, seq, at, type, workspace_id, project_id, sandbox_id, subject, data
		FROM org_events WHERE `+where+` ORDER BY seq LIMIT ?`, append(args, f.Limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sbx.OrgEvent
	for rows.Next() {
		var e sbx.OrgEvent
		var at int64
		var data string
		if err := rows.Scan(&e.OrgID, &e.Seq, &at, &e.Type, &e.WorkspaceID, &e.ProjectID, &e.SandboxID, &e.Subject, &data); err != nil {
			return nil, err
		}
		e.At, e.Data = time.UnixMicro(at).UTC(), []byte(data)
		out = append(out, e)
	}
	return out, rows.Err()
}

// matchesAll reports whether patterns hold "*", which keeps every type.
func matchesAll(patterns []string) bool {
	for _, p := range patterns {
		if p == "*" {
			return true
		}
	}
	return false
}

// LastEventSeq answers the seq of an org's last event (0: none yet).
func (s *Store) LastEventSeq(ctx context.Context, orgID string) (int64, error) {
	var last int64
	err := s.read(ctx).row(ctx, `SELECT coalesce(max(last), 0) FROM org_event_seqs WHERE org_id = ?`, orgID).Scan(&last)
	return last, err
}

// PruneOrgEvents deletes the events older than before, and the ended
// deliveries (succeeded or dead letters) last changed before it; it answers
// how many events went. The counters stay, so seqs never repeat.
func (s *Store) PruneOrgEvents(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx db) error {
		res, err := tx.exec(ctx, `DELETE FROM org_events WHERE at < ?`, before.UnixMicro())
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		_, err = tx.exec(ctx, `DELETE FROM webhook_deliveries WHERE state IN ('succeeded', 'dead_letter') AND updated_at < ?`, before.UnixMicro())
		return err
	})
	return n, err
}

// EventsAppended answers a channel closed at the next commit, in this
// process, of a transaction that appended org events: a follower waits on
// it (and on a timer, for other processes' events) before reading again.
func (s *Store) EventsAppended() <-chan struct{} { return s.bell.wait() }

// bell is a broadcast: wait answers a channel that ring closes.
type bell struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *bell) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *bell) ring() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

// runtimeStatusEvent appends runtime.<status> when sb, a runtime's current
// sandbox, changed the runtime's status (running, paused, idle) from
// before's.
func runtimeStatusEvent(ctx context.Context, tx db, before, sb sbx.Sandbox) error {
	was, is := sbx.RuntimeStatus(before.State), sbx.RuntimeStatus(sb.State)
	if sb.Kind != sbx.KindRuntime || was == is {
		return nil
	}
	var id string
	err := tx.row(ctx, `SELECT id FROM runtimes WHERE sandbox_id = ?`, sb.ID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // no longer the runtime's sandbox
	}
	if err != nil {
		return err
	}
	return appendOrgEvent(ctx, tx, runtimeEvent(sb.OrgID, sb.WorkspaceID, sb.ProjectID, id, "runtime."+is, sb.UpdatedAt,
		map[string]any{"status": is, "sandboxID": sb.ProviderSandboxID}, sb.ID))
}

// runtimeEvent is an org event of runtime id.
func runtimeEvent(orgID, workspaceID, projectID, id, typ string, at time.Time, data map[string]any, sandboxID string) sbx.OrgEvent {
	data["runtimeID"] = id
	return sbx.OrgEvent{OrgID: orgID, At: at, Type: typ, WorkspaceID: workspaceID, ProjectID: projectID, SandboxID: sandboxID,
		Subject: id, Data: sbx.EventData(data)}
}

// snapshotEvent is the org event of a snapshot's state, snapshot.<state>.
func snapshotEvent(sn sbx.Snapshot, at time.Time) sbx.OrgEvent {
	data := map[string]any{"snapshotID": sn.ID, "state": string(sn.State), "purpose": string(sn.Purpose)}
	if sn.Diagnostic != "" {
		data["diagnostic"] = sn.Diagnostic
	}
	return sbx.OrgEvent{OrgID: sn.OrgID, At: at, Type: "snapshot." + string(sn.State), WorkspaceID: sn.WorkspaceID, ProjectID: sn.ProjectID,
		SandboxID: sn.SourceSandboxID, Subject: sn.ID, Data: sbx.EventData(data)}
}

// buildEvent is the org event of a template build's state,
// template_build.<state>; t is the build's template.
func buildEvent(ctx context.Context, tx db, b sbx.TemplateBuild, at time.Time) error {
	var workspaceID, projectID, name string
	err := tx.row(ctx, `SELECT workspace_id, project_id, name FROM project_templates WHERE id = ?`, b.TemplateID).Scan(&workspaceID, &projectID, &name)
	if err != nil {
		return err
	}
	data := map[string]any{"buildID": b.ID, "templateID": b.TemplateID, "template": name, "state": string(b.State)}
	if b.Version != "" {
		data["version"] = b.Version
	}
	if b.Error != "" {
		data["error"] = b.Error
	}
	return appendOrgEvent(ctx, tx, sbx.OrgEvent{OrgID: b.OrgID, At: at, Type: "template_build." + string(b.State),
		WorkspaceID: workspaceID, ProjectID: projectID, Subject: b.ID, Data: sbx.EventData(data)})
}

// creditEvent is an org's own credit event.
func creditEvent(orgID, typ string, at time.Time, data map[string]any) sbx.OrgEvent {
	return sbx.OrgEvent{OrgID: orgID, At: at, Type: typ, Data: sbx.EventData(data)}
}
