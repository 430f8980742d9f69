package ledger

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

const sandboxColumns = `id, org_id, workspace_id, project_id, provider, provider_sandbox_id, kind, template_id,
	state, intent, pause_reason, end_reason, diagnostic, created_at, started_at, paused_at, ended_at,
	timeout_s, expires_at, auto_pause, milli_cpu, memory_mb, gpu_type, gpu_count, gpu_fraction,
	env_var_names, metadata, billed_micros, last_settled_at, handle, access_token, updated_at, hibernated, unbilled_nanos, disk_mb,
	preview_public, preview_localhost, preview_no_wake, ports, egress, snapshot_id, forked_from, pool, next_token, op_owner`

// The reads of one sandbox, by its sbx UUID or its provider sandbox ID,
// within an org or (orgID "") any: every request to a sandbox's agent or
// previews makes them, so they are prepared once (hotReads).
const (
	readSandboxByID = `SELECT ` + sandboxColumns + ` FROM sandboxes
		WHERE id = ? AND (org_id = ? OR ? = '') ORDER BY created_at DESC LIMIT 1`
	readSandboxByProviderID = `SELECT ` + sandboxColumns + ` FROM sandboxes
		WHERE provider_sandbox_id = ? AND (org_id = ? OR ? = '') ORDER BY created_at DESC LIMIT 1`
)

// InsertSandbox records a new sandbox together with the first steps of its
// timeline. A sandbox that holds compute (starting or running) must be
// admitted by its org's plan (admission.go): else nothing is written and the
// error is a plan_limit_exceeded naming the limit.
func (s *Store) InsertSandbox(ctx context.Context, sb sbx.Sandbox, events ...sbx.Event) error {
	return s.InsertSandboxOnce(ctx, nil, sb, events...)
}

// InsertSandboxOnce is InsertSandbox for a create that carried an
// idempotency key (once, when not nil): it records the key with the
// sandbox, or refuses with ErrOnceTaken when another create holds it.
func (s *Store) InsertSandboxOnce(ctx context.Context, once *Once, sb sbx.Sandbox, events ...sbx.Event) error {
	return s.write(ctx, func(tx db) error {
		if err := claimOnce(ctx, tx, once, sb.ID, sb.CreatedAt); err != nil {
			return err
		}
		return s.insertSandbox(ctx, tx, sb, events)
	})
}

// insertSandbox records a new sandbox in tx, admitted against its org's plan
// when it takes compute.
func (s *Store) insertSandbox(ctx context.Context, tx db, sb sbx.Sandbox, events []sbx.Event) error {
	envNames, _ := json.Marshal(nonNil(sb.EnvVarNames))
	meta, _ := json.Marshal(nonNilMap(sb.Metadata))
	ports, _ := json.Marshal(nonNil(sb.Ports))
	handle, err := encodeHandle(sb.Handle)
	if err != nil {
		return err
	}
	var gpuType string
	var gpuCount, gpuFraction int
	if g := sb.Resources.GPU; g != nil {
		gpuType, gpuCount, gpuFraction = g.Type, g.Count, g.Fraction
	}
	if takesCompute(sb) || holdsDisk(sb) {
		if err := admit(ctx, tx, sb, true); err != nil {
			return err
		}
	}
	if sb.Pool != "" { // a member of a pool deleted meanwhile would outlive it
		var n int
		if err := tx.row(ctx, `SELECT count(*) FROM template_pools WHERE template_id = ?`, sb.Pool).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return sbx.Errorf(sbx.ENotFound, "template %s has no warm pool", sb.Pool)
		}
	}
	_, err = tx.exec(ctx, `INSERT INTO sandboxes (`+sandboxColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sb.ID, sb.OrgID, sb.WorkspaceID, sb.ProjectID, sb.Provider, sb.ProviderSandboxID, string(sb.Kind), sb.TemplateID,
		string(sb.State), string(sb.Intent), string(sb.PauseReason), string(sb.EndReason), sb.Diagnostic,
		sb.CreatedAt.UnixMicro(), micros(sb.StartedAt), micros(sb.PausedAt), micros(sb.EndedAt),
		int64(sb.Timeout/time.Second), micros(sb.ExpiresAt), sb.AutoPause, sb.Resources.MilliCPU, sb.Resources.MemoryMB,
		gpuType, gpuCount, gpuFraction, string(envNames), string(meta), sb.BilledMicros, micros(sb.LastSettledAt),
		handle, s.seal.Seal(sb.AccessToken, tokenContext(sb.ID, sb.OrgID)), sb.UpdatedAt.UnixMicro(), sb.Hibernated, sb.UnbilledNanos, sb.Resources.DiskMB,
		sb.Preview.Public, sb.Preview.LocalHost, sb.Preview.NoWake, string(ports), encodeEgress(sb.Egress), sb.SnapshotID, sb.ForkedFrom, sb.Pool,
		s.sealNext(sb), sb.OpOwner)
	if err != nil {
		if isUniqueViolation(err) {
			return sbx.Errorf(sbx.EConflict, "sandbox %s already exists", sb.ProviderSandboxID)
		}
		return err
	}
	for k, v := range sb.Metadata {
		if _, err := tx.exec(ctx, `INSERT INTO sandbox_metadata (sandbox_id, key, value) VALUES (?, ?, ?)`, sb.ID, k, v); err != nil {
			return err
		}
	}
	if err := insertMounts(ctx, tx, sb); err != nil {
		return err
	}
	return insertEvents(ctx, tx, sb, events)
}

// GetSandbox finds a sandbox of org by its sbx UUID or its provider sandbox ID.
// An empty orgID searches every org (for the server's own loops).
func (s *Store) GetSandbox(ctx context.Context, orgID, ref string) (sbx.Sandbox, error) {
	return s.getSandbox(ctx, s.read(ctx), orgID, ref, false)
}

// getSandbox finds a sandbox; lock locks its row until the transaction ends.
func (s *Store) getSandbox(ctx context.Context, q db, orgID, ref string, lock bool) (sbx.Sandbox, error) {
	query := readSandboxByProviderID
	if _, err := uuid.Parse(ref); err == nil {
		query = readSandboxByID
	}
	sb, err := s.scanSandbox(q.row(ctx, query+q.forUpdateIf(lock), ref, orgID, orgID))
	if errors.Is(err, sql.ErrNoRows) {
		return sbx.Sandbox{}, sbx.Errorf(sbx.ENotFound, "sandbox %s not found", ref)
	}
	return sb, err
}

// UpdateSandbox loads sandbox id, lets fn change it and name the timeline steps
// to record, and writes both in one transaction. When fn fails nothing is
// written and its error is returned. This is the ledger's compare-and-set: fn
// sees the committed row, and no other write can come between. An update
// that starts a resume (writes the resuming intent) must be admitted by the
// org's plan, as InsertSandbox's rows are. When fn changes the state, the
// time since the last settlement is settled first, in the same transaction,
// at the old state's prices up to sb.UpdatedAt; fn must not change the
// credit fields.
func (s *Store) UpdateSandbox(ctx context.Context, id string, fn func(*sbx.Sandbox) ([]sbx.Event, error)) (sbx.Sandbox, error) {
	var sb sbx.Sandbox
	err := s.write(ctx, func(tx db) error {
		var err error
		if sb, err = s.getSandbox(ctx, tx, "", id, true); err != nil {
			return err
		}
		before := sb
		events, err := fn(&sb)
		if err != nil {
			return err
		}
		if startsCompute(before, sb) {
			if err := admit(ctx, tx, sb, false); err != nil {
				return err
			}
		}
		if sb.State != before.State {
			if err := s.settleInTx(ctx, tx, &sb, before.State, sb.UpdatedAt); err != nil {
				return err
			}
		}
		handle, err := encodeHandle(sb.Handle)
		if err != nil {
			return err
		}
		_, err = tx.exec(ctx, `UPDATE sandboxes SET provider_sandbox_id = ?, state = ?, intent = ?,
			pause_reason = ?, end_reason = ?, diagnostic = ?, started_at = ?, paused_at = ?, ended_at = ?,
			timeout_s = ?, expires_at = ?, billed_micros = ?, last_settled_at = ?, handle = ?, access_token = ?,
			updated_at = ?, hibernated = ?, unbilled_nanos = ?, preview_public = ?, preview_localhost = ?, preview_no_wake = ?, egress = ?,
			next_token = ?, op_owner = ? WHERE id = ?`,
			sb.ProviderSandboxID, string(sb.State), string(sb.Intent), string(sb.PauseReason), string(sb.EndReason),
			sb.Diagnostic, micros(sb.StartedAt), micros(sb.PausedAt), micros(sb.EndedAt), int64(sb.Timeout/time.Second),
			micros(sb.ExpiresAt), sb.BilledMicros, micros(sb.LastSettledAt), handle, s.seal.Seal(sb.AccessToken, tokenContext(sb.ID, sb.OrgID)),
			sb.UpdatedAt.UnixMicro(), sb.Hibernated, sb.UnbilledNanos, sb.Preview.Public, sb.Preview.LocalHost, sb.Preview.NoWake, encodeEgress(sb.Egress),
			s.sealNext(sb), sb.OpOwner, sb.ID)
		if err != nil {
			return err
		}
		if sb.State == sbx.StatePaused && before.State != sbx.StatePaused && sb.PauseReason == sbx.PauseInsufficientCredits {
			err := appendOrgEvent(ctx, tx, sbx.OrgEvent{OrgID: sb.OrgID, At: sb.UpdatedAt, Type: sbx.EventCreditsPaused,
				WorkspaceID: sb.WorkspaceID, ProjectID: sb.ProjectID, SandboxID: sb.ID, Subject: sb.ProviderSandboxID,
				Data: sbx.EventData(map[string]any{"sandboxID": sb.ProviderSandboxID, "pauseReason": string(sb.PauseReason)})})
			if err != nil {
				return err
			}
		}
		if err := runtimeStatusEvent(ctx, tx, before, sb); err != nil {
			return err
		}
		return insertEvents(ctx, tx, sb, events)
	})
	return sb, err
}

// Filter is sbx.SandboxFilter.
type Filter = sbx.SandboxFilter

// inMembersWorkspaces keeps the sandboxes of the workspaces of the member
// its argument names.
const inMembersWorkspaces = "workspace_id IN (SELECT workspace_id FROM memberships WHERE user_id = ?)"

// ListSandboxes returns one page of sandboxes, newest first, and the cursor of
// the next page ("" on the last).
func (s *Store) ListSandboxes(ctx context.Context, f Filter) ([]sbx.Sandbox, string, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	where, args := []string{"org_id = ?"}, []any{f.OrgID}
	if f.ProjectID != "" {
		where, args = append(where, "project_id = ?"), append(args, f.ProjectID)
	}
	if f.MemberID != "" {
		where, args = append(where, inMembersWorkspaces), append(args, f.MemberID)
	}
	if len(f.States) > 0 {
		where = append(where, "state IN ("+strings.TrimSuffix(strings.Repeat("?, ", len(f.States)), ", ")+")")
		for _, st := range f.States {
			args = append(args, string(st))
		}
	}
	if f.TemplateID != "" {
		where, args = append(where, "template_id = ?"), append(args, f.TemplateID)
	}
	for k, v := range f.Metadata {
		where = append(where, "EXISTS (SELECT 1 FROM sandbox_metadata m WHERE m.sandbox_id = sandboxes.id AND m.key = ? AND m.value = ?)")
		args = append(args, k, v)
	}
	if f.Cursor != "" {
		at, id, err := decodeCursor(f.Cursor)
		if err != nil {
			return nil, "", err
		}
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, at, at, id)
	}
	args = append(args, f.Limit+1)
	rows, err := s.read(ctx).query(ctx, `SELECT `+sandboxColumns+` FROM sandboxes WHERE `+
		strings.Join(where, " AND ")+` ORDER BY created_at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, "", err
	}
	out, err := s.scanSandboxes(rows)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > f.Limit {
		out = out[:f.Limit]
		last := out[len(out)-1]
		next = encodeCursor(last.CreatedAt.UnixMicro(), last.ID)
	}
	return out, next, nil
}

// OpenSandboxes lists a provider's sandboxes that still hold or may hold
// compute: not final, or with an operation in flight.
func (s *Store) OpenSandboxes(ctx context.Context, provider string) ([]sbx.Sandbox, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
		WHERE provider = ? AND (state IN ('starting', 'running', 'paused') OR intent <> '')
		ORDER BY created_at, id`, provider)
	if err != nil {
		return nil, err
	}
	return s.scanSandboxes(rows)
}

// Expired lists running sandboxes whose expiry is at or before now.
func (s *Store) Expired(ctx context.Context, now time.Time) ([]sbx.Sandbox, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
		WHERE expires_at IS NOT NULL AND expires_at <= ? AND state = 'running' AND intent = ''
		ORDER BY expires_at`, now.UnixMicro())
	if err != nil {
		return nil, err
	}
	return s.scanSandboxes(rows)
}

// IdlePaused returns the sandboxes paused in memory (not hibernated) since
// before or earlier, with nothing in progress: the idle policy hibernates them.
func (s *Store) IdlePaused(ctx context.Context, before time.Time) ([]sbx.Sandbox, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
		WHERE state = 'paused' AND NOT hibernated AND intent = '' AND paused_at <= ?
		ORDER BY paused_at`, before.UnixMicro())
	if err != nil {
		return nil, err
	}
	return s.scanSandboxes(rows)
}

// NextExpiry returns the earliest expiry of a running sandbox, or the zero time.
func (s *Store) NextExpiry(ctx context.Context) (time.Time, error) {
	var at sql.NullInt64
	err := s.read(ctx).row(ctx, `SELECT min(expires_at) FROM sandboxes WHERE expires_at IS NOT NULL AND state = 'running'`).Scan(&at)
	return fromMicros(at), err
}

// AddEvents appends steps to a sandbox's timeline that change nothing else
// (what serve did inside it, such as materializing capabilities).
func (s *Store) AddEvents(ctx context.Context, sandboxID string, events ...sbx.Event) error {
	return s.write(ctx, func(tx db) error {
		sb, err := s.getSandbox(ctx, tx, "", sandboxID, false)
		if err != nil {
			return err
		}
		return insertEvents(ctx, tx, sb, events)
	})
}

// Events returns a sandbox's timeline, oldest first.
func (s *Store) Events(ctx context.Context, sandboxID string) ([]sbx.Event, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT id, at, step, detail FROM sandbox_events WHERE sandbox_id = ? ORDER BY id`, sandboxID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sbx.Event
	for rows.Next() {
		e := sbx.Event{SandboxID: sandboxID}
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Step, &e.Detail); err != nil {
			return nil, err
		}
		e.At = time.UnixMicro(at).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// insertEvents appends steps to sb's timeline and, each as an event of
// type sandbox.<step>, to its org's event log (events.go).
func insertEvents(ctx context.Context, tx db, sb sbx.Sandbox, events []sbx.Event) error {
	for _, e := range events {
		if _, err := tx.exec(ctx, `INSERT INTO sandbox_events (sandbox_id, at, step, detail) VALUES (?, ?, ?, ?)`,
			sb.ID, e.At.UnixMicro(), e.Step, e.Detail); err != nil {
			return err
		}
		if err := appendOrgEvent(ctx, tx, sandboxEvent(sb, e)); err != nil {
			return err
		}
	}
	return nil
}

type scanner interface{ Scan(dest ...any) error }

func (s *Store) scanSandbox(row scanner) (sbx.Sandbox, error) {
	var (
		sb                                   sbx.Sandbox
		kind, state, intent, pause, end      string
		created, updated, timeoutS           int64
		started, paused, ended, expires, set sql.NullInt64
		gpuType                              string
		gpuCount, gpuFraction                int
		envNames, meta, handle, token, ports string
		egress, next                         string
	)
	err := row.Scan(&sb.ID, &sb.OrgID, &sb.WorkspaceID, &sb.ProjectID, &sb.Provider, &sb.ProviderSandboxID, &kind,
		&sb.TemplateID, &state, &intent, &pause, &end, &sb.Diagnostic, &created, &started, &paused, &ended,
		&timeoutS, &expires, &sb.AutoPause, &sb.Resources.MilliCPU, &sb.Resources.MemoryMB, &gpuType, &gpuCount,
		&gpuFraction, &envNames, &meta, &sb.BilledMicros, &set, &handle, &token, &updated, &sb.Hibernated, &sb.UnbilledNanos,
		&sb.Resources.DiskMB, &sb.Preview.Public, &sb.Preview.LocalHost, &sb.Preview.NoWake, &ports, &egress, &sb.SnapshotID, &sb.ForkedFrom, &sb.Pool, &next, &sb.OpOwner)
	if err != nil {
		return sb, err
	}
	sb.Kind, sb.State, sb.Intent = sbx.Kind(kind), sbx.State(state), sbx.Intent(intent)
	sb.PauseReason, sb.EndReason = sbx.PauseReason(pause), sbx.EndReason(end)
	sb.CreatedAt, sb.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	sb.StartedAt, sb.PausedAt, sb.EndedAt = fromMicros(started), fromMicros(paused), fromMicros(ended)
	sb.ExpiresAt, sb.LastSettledAt = fromMicros(expires), fromMicros(set)
	sb.Timeout = time.Duration(timeoutS) * time.Second
	if gpuCount > 0 {
		sb.Resources.GPU = &sbx.GPURequest{Type: gpuType, Count: gpuCount, Fraction: gpuFraction}
	}
	if err := json.Unmarshal([]byte(envNames), &sb.EnvVarNames); err != nil {
		return sb, fmt.Errorf("sandbox %s env names: %w", sb.ID, err)
	}
	if err := json.Unmarshal([]byte(meta), &sb.Metadata); err != nil {
		return sb, fmt.Errorf("sandbox %s metadata: %w", sb.ID, err)
	}
	if err := json.Unmarshal([]byte(ports), &sb.Ports); err != nil {
		return sb, fmt.Errorf("sandbox %s ports: %w", sb.ID, err)
	}
	if sb.Egress, err = decodeEgress(egress); err != nil {
		return sb, fmt.Errorf("sandbox %s egress: %w", sb.ID, err)
	}
	if handle != "" {
		if err := json.Unmarshal([]byte(handle), &sb.Handle); err != nil {
			return sb, fmt.Errorf("sandbox %s handle: %w", sb.ID, err)
		}
	}
	if sb.AccessToken, err = s.seal.Open(token, tokenContext(sb.ID, sb.OrgID)); err != nil {
		return sb, fmt.Errorf("sandbox %s access token: %w", sb.ID, err)
	}
	if next != "" {
		if sb.NextToken, err = s.seal.Open(next, nextTokenContext(sb.ID, sb.OrgID)); err != nil {
			return sb, fmt.Errorf("sandbox %s next token: %w", sb.ID, err)
		}
	}
	return sb, nil
}

func (s *Store) scanSandboxes(rows *sql.Rows) ([]sbx.Sandbox, error) {
	defer rows.Close()
	var out []sbx.Sandbox
	for rows.Next() {
		sb, err := s.scanSandbox(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sb)
	}
	return out, rows.Err()
}

func encodeHandle(h sbx.Handle) (string, error) {
	if h.IsZero() {
		return "", nil
	}
	b, err := json.Marshal(h)
	return string(b), err
}

func encodeCursor(at int64, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at, 10) + ":" + id))
}

func decodeCursor(c string) (int64, string, error) {
	bad := sbx.Errorf(sbx.EInvalid, "cursor %q is not one this server returned", c)
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", bad
	}
	at, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" {
		return 0, "", bad
	}
	return n, id, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// encodeEgress is an egress policy as its column holds it: JSON, or ”
// for none.
func encodeEgress(e *sbx.Egress) string {
	if e == nil {
		return ""
	}
	data, _ := json.Marshal(e)
	return string(data)
}

func decodeEgress(s string) (*sbx.Egress, error) {
	if s == "" {
		return nil, nil
	}
	var e sbx.Egress
	if err := json.Unmarshal([]byte(s), &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// sealNext seals a sandbox's next token, "" when it has none.
func (s *Store) sealNext(sb sbx.Sandbox) string {
	if sb.NextToken == "" {
		return ""
	}
	return s.seal.Seal(sb.NextToken, nextTokenContext(sb.ID, sb.OrgID))
}
