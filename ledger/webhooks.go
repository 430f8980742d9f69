package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// An org's webhooks and their deliveries (migration 0019). The dispatcher
// (package webhooks) moves each webhook's cursor over its org's events,
// enqueueing a delivery per matching event in the same transaction, then
// claims due deliveries, and finishes each with its outcome.

const webhookColumns = `id, org_id, url, types, last_seq, created_at`

const deliveryColumns = `id, webhook_id, org_id, seq, event_type, state, attempts, next_attempt_at, last_status, last_error, created_at, updated_at`

// webhookSecretContext binds a webhook's sealed secret to its row.
func webhookSecretContext(id, orgID string) string {
	return "webhook secret\x00" + id + "\x00" + orgID
}

// InsertWebhook records w (its ID made here) with its signing secret,
// sealed; its cursor starts at the org's last event, so it gets the
// events after its registration.
func (s *Store) InsertWebhook(ctx context.Context, w sbx.Webhook, secret string) (sbx.Webhook, error) {
	w.ID = "wh_" + uuid.NewString()
	types, _ := json.Marshal(nonNil(w.Types))
	err := s.write(ctx, func(tx db) error {
		err := tx.row(ctx, `SELECT coalesce(max(last), 0) FROM org_event_seqs WHERE org_id = ?`, w.OrgID).Scan(&w.Cursor)
		if err != nil {
			return err
		}
		_, err = tx.exec(ctx, `INSERT INTO webhooks (id, org_id, url, types, secret, last_seq, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			w.ID, w.OrgID, w.URL, string(types), s.seal.Seal(secret, webhookSecretContext(w.ID, w.OrgID)), w.Cursor, w.CreatedAt.UnixMicro())
		return err
	})
	return w, err
}

// Webhooks answers an org's webhooks, oldest first.
func (s *Store) Webhooks(ctx context.Context, orgID string) ([]sbx.Webhook, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE org_id = ? ORDER BY created_at, id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sbx.Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// GetWebhook finds webhook id of an org (another org's is not found).
func (s *Store) GetWebhook(ctx context.Context, orgID, id string) (sbx.Webhook, error) {
	return getWebhook(ctx, s.read(ctx), orgID, id, false)
}

func getWebhook(ctx context.Context, q db, orgID, id string, lock bool) (sbx.Webhook, error) {
	w, err := scanWebhook(q.row(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND org_id = ?`+q.forUpdateIf(lock), id, orgID))
	if errors.Is(err, sql.ErrNoRows) {
		return w, sbx.Errorf(sbx.ENotFound, "webhook %s not found", id)
	}
	return w, err
}

// DeleteWebhook removes webhook id of an org, with its deliveries, and
// answers what it was.
func (s *Store) DeleteWebhook(ctx context.Context, orgID, id string) (sbx.Webhook, error) {
	var w sbx.Webhook
	err := s.write(ctx, func(tx db) error {
		var err error
		if w, err = getWebhook(ctx, tx, orgID, id, true); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = ?`, id); err != nil {
			return err
		}
		_, err = tx.exec(ctx, `DELETE FROM webhooks WHERE id = ?`, id)
		return err
	})
	return w, err
}

// WebhookDeliveries answers up to limit (default and most 1000) of a
// webhook's deliveries, in state when not "", newest event first.
func (s *Store) WebhookDeliveries(ctx context.Context, orgID, webhookID string, state sbx.DeliveryState, limit int) ([]sbx.WebhookDelivery, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	if _, err := s.GetWebhook(ctx, orgID, webhookID); err != nil {
		return nil, err
	}
	rows, err := s.read(ctx).query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries
		WHERE webhook_id = ? AND (state = ? OR ? = '') ORDER BY seq DESC LIMIT ?`, webhookID, string(state), string(state), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sbx.WebhookDelivery
	for rows.Next() {
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// Redeliver puts delivery id of a webhook of an org back in the queue, due
// now, with its attempts counted again from none. One being sent is a 409.
func (s *Store) Redeliver(ctx context.Context, orgID, webhookID, id string, now time.Time) (sbx.WebhookDelivery, error) {
	var d sbx.WebhookDelivery
	err := s.write(ctx, func(tx db) error {
		var err error
		d, err = scanDelivery(tx.row(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = ? AND webhook_id = ? AND org_id = ?`+tx.forUpdate(),
			id, webhookID, orgID))
		if errors.Is(err, sql.ErrNoRows) {
			return sbx.Errorf(sbx.ENotFound, "delivery %s of webhook %s not found", id, webhookID)
		}
		if err != nil {
			return err
		}
		if d.State == sbx.DeliveryInProgress {
			return sbx.Errorf(sbx.EConflict, "delivery %s is being sent; wait for its attempt to end", id)
		}
		d.State, d.Attempts, d.NextAttemptAt, d.UpdatedAt = sbx.DeliveryQueued, 0, now, now
		_, err = tx.exec(ctx, `UPDATE webhook_deliveries SET state = ?, attempts = 0, next_attempt_at = ?, updated_at = ? WHERE id = ?`,
			string(d.State), now.UnixMicro(), now.UnixMicro(), id)
		return err
	})
	return d, err
}

// EnqueueDeliveries moves every webhook's cursor over the events of its org
// after it, at most batch events per webhook, enqueueing a delivery (due
// now) for each that its types match, in one transaction per webhook. It
// answers how many deliveries it enqueued.
func (s *Store) EnqueueDeliveries(ctx context.Context, now time.Time, batch int) (int, error) {
	ids, err := s.ids(ctx, `SELECT w.id FROM webhooks w JOIN org_event_seqs q ON q.org_id = w.org_id WHERE q.last > w.last_seq`)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, id := range ids {
		err := s.write(ctx, func(tx db) error {
			var w sbx.Webhook
			var err error
			w, err = scanWebhook(tx.row(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ?`+tx.forUpdate(), id))
			if errors.Is(err, sql.ErrNoRows) {
				return nil // deleted meanwhile
			}
			if err != nil {
				return err
			}
			rows, err := tx.query(ctx, `SELECT seq, type FROM org_events WHERE org_id = ? AND seq > ? ORDER BY seq LIMIT ?`, w.OrgID, w.Cursor, batch)
			if err != nil {
				return err
			}
			type ev struct {
				seq int64
				typ string
			}
			var evs []ev
			for rows.Next() {
				var e ev
				if err := rows.Scan(&e.seq, &e.typ); err != nil {
					rows.Close()
					return err
				}
				evs = append(evs, e)
			}
			rows.Close()
			if err := rows.Err(); err != nil || len(evs) == 0 {
				return err
			}
			for _, e := range evs {
				if !sbx.EventTypeMatches(w.Types, e.typ) {
					continue
				}
				_, err := tx.exec(ctx, `INSERT INTO webhook_deliveries (`+deliveryColumns+`) VALUES (?, ?, ?, ?, ?, ?, 0, ?, 0, '', ?, ?)`,
					"whd_"+uuid.NewString(), w.ID, w.OrgID, e.seq, e.typ, string(sbx.DeliveryQueued), now.UnixMicro(), now.UnixMicro(), now.UnixMicro())
				if err != nil {
					return err
				}
				total++
			}
			_, err = tx.exec(ctx, `UPDATE webhooks SET last_seq = ? WHERE id = ?`, evs[len(evs)-1].seq, w.ID)
			return err
		})
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// DueDelivery is sbx.DueDelivery.
type DueDelivery = sbx.DueDelivery

// ClaimDeliveries marks up to n queued deliveries that are due at now
// in_progress, counting the attempt, and answers them: of each webhook
// with none in progress, its oldest due one (PostgreSQL skips rows another
// claim holds). A delivery whose event retention removed is
// ended as a dead letter instead.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, n int) ([]DueDelivery, error) {
	var out []DueDelivery
	err := s.write(ctx, func(tx db) error {
		out = nil
		skip := ""
		if s.pg {
			skip = " FOR UPDATE SKIP LOCKED"
		}
		// The oldest due delivery of each webhook with none in progress:
		// a webhook gets its events one at a time, in order, while none
		// is waiting to be retried.
		rows, err := tx.query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE state = 'queued' AND next_attempt_at <= ?
			AND webhook_id NOT IN (SELECT webhook_id FROM webhook_deliveries WHERE state = 'in_progress')
			ORDER BY seq, id LIMIT ?`+skip, now.UnixMicro(), 50*n)
		if err != nil {
			return err
		}
		var ds []sbx.WebhookDelivery
		taken := map[string]bool{}
		for rows.Next() {
			d, err := scanDelivery(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if !taken[d.WebhookID] && len(ds) < n {
				taken[d.WebhookID] = true
				ds = append(ds, d)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, d := range ds {
			due := DueDelivery{Delivery: d}
			var sealed string
			err := tx.row(ctx, `SELECT url, secret FROM webhooks WHERE id = ?`, d.WebhookID).Scan(&due.URL, &sealed)
			if errors.Is(err, sql.ErrNoRows) {
				continue // its webhook was deleted meanwhile
			}
			if err != nil {
				return err
			}
			if due.Secret, err = s.seal.Open(sealed, webhookSecretContext(d.WebhookID, d.OrgID)); err != nil {
				return err
			}
			due.Event, err = orgEvent(ctx, tx, d.OrgID, d.Seq)
			if errors.Is(err, sql.ErrNoRows) {
				_, err = tx.exec(ctx, `UPDATE webhook_deliveries SET state = 'dead_letter', last_error = ?, updated_at = ? WHERE id = ?`,
					"the event is older than the events' retention", now.UnixMicro(), d.ID)
				if err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
			due.Delivery.State, due.Delivery.UpdatedAt = sbx.DeliveryInProgress, now
			due.Delivery.Attempts++
			_, err = tx.exec(ctx, `UPDATE webhook_deliveries SET state = 'in_progress', attempts = attempts + 1, updated_at = ? WHERE id = ?`,
				now.UnixMicro(), d.ID)
			if err != nil {
				return err
			}
			out = append(out, due)
		}
		return nil
	})
	return out, err
}

// orgEvent reads one event of an org.
func orgEvent(ctx context.Context, q db, orgID string, seq int64) (sbx.OrgEvent, error) {
	e := sbx.OrgEvent{OrgID: orgID, Seq: seq}
	var at int64
	var data string
	err := q.row(ctx, `SELECT at, type, workspace_id, project_id, sandbox_id, subject, data FROM org_events WHERE org_id = ? AND seq = ?`, orgID, seq).
		Scan(&at, &e.Type, &e.WorkspaceID, &e.ProjectID, &e.SandboxID, &e.Subject, &data)
	e.At, e.Data = time.UnixMicro(at).UTC(), []byte(data)
	return e, err
}

// FinishDelivery records how attempt of delivery d ended: d's State
// (succeeded, queued again at d.NextAttemptAt, or dead_letter), LastStatus
// and LastError. A delivery no longer in progress (redelivered, deleted)
// is left as it is.
func (s *Store) FinishDelivery(ctx context.Context, d sbx.WebhookDelivery, now time.Time) error {
	return s.write(ctx, func(tx db) error {
		_, err := tx.exec(ctx, `UPDATE webhook_deliveries SET state = ?, next_attempt_at = ?, last_status = ?, last_error = ?, updated_at = ?
			WHERE id = ? AND state = 'in_progress'`,
			string(d.State), d.NextAttemptAt.UnixMicro(), d.LastStatus, d.LastError, now.UnixMicro(), d.ID)
		return err
	})
}

// RequeueDeliveries puts back in the queue, due now, the deliveries left
// in progress: at the start of a dispatcher, those are the attempts a
// stopped or crashed serve never finished.
func (s *Store) RequeueDeliveries(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx db) error {
		res, err := tx.exec(ctx, `UPDATE webhook_deliveries SET state = 'queued', next_attempt_at = ?, updated_at = ? WHERE state = 'in_progress'`,
			now.UnixMicro(), now.UnixMicro())
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	return n, err
}

func scanWebhook(row scanner) (sbx.Webhook, error) {
	var w sbx.Webhook
	var types string
	var created int64
	if err := row.Scan(&w.ID, &w.OrgID, &w.URL, &types, &w.Cursor, &created); err != nil {
		return w, err
	}
	w.CreatedAt = time.UnixMicro(created).UTC()
	if err := json.Unmarshal([]byte(types), &w.Types); err != nil {
		return w, err
	}
	return w, nil
}

func scanDelivery(row scanner) (sbx.WebhookDelivery, error) {
	var d sbx.WebhookDelivery
	var state string
	var next, created, updated int64
	err := row.Scan(&d.ID, &d.WebhookID, &d.OrgID, &d.Seq, &d.EventType, &state, &d.Attempts, &next, &d.LastStatus, &d.LastError, &created, &updated)
	d.State = sbx.DeliveryState(state)
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt = time.UnixMicro(next).UTC(), time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return d, err
}
