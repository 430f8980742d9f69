package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/pricing"
)

// Settlement is sbx.Settlement.
type Settlement = sbx.Settlement

// errStale says a sandbox changed between the read a settlement was
// computed from and its write.
var errStale = errors.New("sandbox changed during its settlement")

// Rates answers the price table: the default table, then every rate set.
func (s *Store) Rates(ctx context.Context) (pricing.Table, error) { return rates(ctx, s.read(ctx)) }

func rates(ctx context.Context, q db) (pricing.Table, error) {
	table := pricing.Default()
	rows, err := q.query(ctx, `SELECT provider, resource, gpu_type, gpu_share, nanos_per_second, effective_at FROM rates ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r pricing.Rate
		var at int64
		if err := rows.Scan(&r.Provider, &r.Resource, &r.GPUType, &r.GPUShare, &r.NanosPerSecond, &at); err != nil {
			return nil, err
		}
		r.EffectiveAt = time.UnixMicro(at).UTC()
		table = append(table, r)
	}
	return table, rows.Err()
}

// AddRate records r from r.EffectiveAt on, which may not be before now:
// time already settled keeps the prices it was settled at.
func (s *Store) AddRate(ctx context.Context, r pricing.Rate, now time.Time) error {
	if err := r.Check(); err != nil {
		return err
	}
	if r.EffectiveAt.Before(now) {
		return sbx.Invalid("effective_at", "effective_at %s is in the past: a price applies from now on", r.EffectiveAt.Format(time.RFC3339))
	}
	return s.write(ctx, func(tx db) error {
		_, err := tx.exec(ctx, `INSERT INTO rates (provider, resource, gpu_type, gpu_share, nanos_per_second, effective_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			r.Provider, string(r.Resource), r.GPUType, r.GPUShare, r.NanosPerSecond, r.EffectiveAt.UnixMicro(), now.UnixMicro())
		return err
	})
}

// TopUp adds micros to org's balance and answers the new balance.
func (s *Store) TopUp(ctx context.Context, orgID string, micros int64, note string, now time.Time) (int64, error) {
	if micros <= 0 {
		return 0, sbx.Invalid("credits", "a top-up adds a positive number of credits")
	}
	var balance int64
	err := s.write(ctx, func(tx db) error {
		var err error
		balance, err = topUp(ctx, tx, orgID, micros, note, now)
		return err
	})
	return balance, err
}

func topUp(ctx context.Context, tx db, orgID string, micros int64, note string, now time.Time) (int64, error) {
	var balance int64
	err := tx.row(ctx, `UPDATE orgs SET balance_micros = balance_micros + ? WHERE id = ? RETURNING balance_micros`, micros, orgID).Scan(&balance)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, sbx.Errorf(sbx.ENotFound, "org %s not found", orgID)
	}
	if err != nil {
		return 0, err
	}
	_, err = tx.exec(ctx, `INSERT INTO top_ups (id, org_id, micros, note, created_at) VALUES (?, ?, ?, ?, ?)`,
		uuid.NewString(), orgID, micros, note, now.UnixMicro())
	if err != nil {
		return 0, err
	}
	return balance, appendOrgEvent(ctx, tx, creditEvent(orgID, sbx.EventCreditsTopUp, now,
		map[string]any{"micros": micros, "balance": balance, "note": note}))
}

// Balance answers org's balance in micro-credits.
func (s *Store) Balance(ctx context.Context, orgID string) (int64, error) {
	var balance int64
	err := s.read(ctx).row(ctx, `SELECT balance_micros FROM orgs WHERE id = ?`, orgID).Scan(&balance)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, sbx.Errorf(sbx.ENotFound, "org %s not found", orgID)
	}
	return balance, err
}

// Billable lists the sandboxes that accrue charges: running or paused.
func (s *Store) Billable(ctx context.Context) ([]string, error) {
	return s.ids(ctx, `SELECT id FROM sandboxes WHERE state IN ('running', 'paused') ORDER BY id`)
}

// Unfunded lists the running sandboxes, with nothing in progress, of orgs
// whose balance is empty.
func (s *Store) Unfunded(ctx context.Context) ([]string, error) {
	return s.ids(ctx, `SELECT s.id FROM sandboxes s JOIN orgs o ON o.id = s.org_id
		WHERE o.balance_micros = 0 AND s.state = 'running' AND s.intent = '' ORDER BY s.id`)
}

func (s *Store) ids(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := s.read(ctx).query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// The statements of a settlement on SQLite, prepared once on its writer
// (see hotStatements): a settlement runs each of them once, and preparing
// one costs about as much as running it.
const (
	readBillingRow = `SELECT org_id, state, milli_cpu, memory_mb, gpu_type, gpu_count, gpu_fraction,
		billed_micros, unbilled_nanos, last_settled_at, created_at, pool FROM sandboxes WHERE id = ?`
	readBalance      = `SELECT balance_micros FROM orgs WHERE id = ?`
	takeBalance      = `UPDATE orgs SET balance_micros = balance_micros - ? WHERE id = ?`
	recordSettlement = `INSERT INTO settlements (org_id, sandbox_id, state, from_at, to_at, cpu_micros, memory_micros,
		gpu_micros, storage_micros, micros, balance_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	billSandbox = `UPDATE sandboxes SET billed_micros = ?, unbilled_nanos = ?, last_settled_at = ? WHERE id = ?`
)

// hotStatements are prepared on SQLite's writer when the ledger opens,
// hotReads on its pool of readers (and on the writer too: a transaction
// reads a sandbox before it changes it).
var (
	hotStatements = []string{readBillingRow, readBalance, takeBalance, recordSettlement, billSandbox, readSandboxByID, readSandboxByProviderID}
	hotReads      = []string{readSandboxByID, readSandboxByProviderID, readKeyBySecret, readOrgByID, readOrgKeyProject, readProjectKeyProject, readMemberKeyProject, readUser, readOrgRoles}
)

// Settle charges sandbox id for its time since its last settlement, up to
// now, at table's prices: what it owes moves from its org's balance to its
// billed credits, never taking the balance below zero (it takes what is
// left). On PostgreSQL this is one statement; on SQLite one BEGIN
// IMMEDIATE transaction. A settlement that finds the sandbox changed since
// it read it (another settlement, a state change) starts again.
func (s *Store) Settle(ctx context.Context, id string, now time.Time, table pricing.Table) (Settlement, error) {
	if !s.pg {
		var st Settlement
		err := s.write(ctx, func(tx db) error {
			sb, err := billingRow(ctx, tx, id)
			if err != nil {
				return err
			}
			st, err = s.settleRow(ctx, tx, &sb, sb.State, now, table)
			if err != nil || st.To.IsZero() {
				return err
			}
			_, err = tx.exec(ctx, billSandbox, sb.BilledMicros, sb.UnbilledNanos, now.UnixMicro(), id)
			return err
		})
		return st, err
	}
	for range 10 {
		sb, err := billingRow(ctx, s.read(ctx), id)
		if err != nil {
			return Settlement{}, err
		}
		st, err := s.settleOneStatement(ctx, sb, now, table)
		if !errors.Is(err, errStale) {
			return st, err
		}
	}
	return Settlement{}, fmt.Errorf("settling sandbox %s: it kept changing", id)
}

// settleInTx settles sb, whose row the transaction holds, at state up to
// to, at the prices in the ledger, and sets its credit fields; the caller
// writes the row.
func (s *Store) settleInTx(ctx context.Context, tx db, sb *sbx.Sandbox, state sbx.State, to time.Time) error {
	if !to.After(sb.LastSettledAt) {
		return nil
	}
	table, err := rates(ctx, tx)
	if err != nil {
		return err
	}
	_, err = s.settleRow(ctx, tx, sb, state, to, table)
	return err
}

// settleRow bills sb at state up to to inside a transaction: it takes what
// it can from the org's balance (locking the org's row), records the
// settlement and sets sb's credit fields. The zero Settlement means there
// was no time to settle.
func (s *Store) settleRow(ctx context.Context, tx db, sb *sbx.Sandbox, state sbx.State, to time.Time, table pricing.Table) (Settlement, error) {
	b := newBill(table, *sb, state, to)
	if b.to.IsZero() {
		return Settlement{}, nil
	}
	var balance int64
	if err := tx.row(ctx, readBalance+tx.forUpdate(), sb.OrgID).Scan(&balance); err != nil {
		return Settlement{}, err
	}
	st := b.settlement(*sb, state, min(balance, b.owed), balance-min(balance, b.owed))
	if st.Paid > 0 {
		if _, err := tx.exec(ctx, takeBalance, st.Paid, sb.OrgID); err != nil {
			return Settlement{}, err
		}
	}
	if st.Owed > 0 {
		err := tx.row(ctx, recordSettlement, st.OrgID, st.SandboxID, string(st.State), st.From.UnixMicro(), st.To.UnixMicro(), st.CPU, st.Memory, st.GPU,
			st.Storage, st.Paid, st.BalanceAfter).Scan(&st.ID)
		if err != nil {
			return Settlement{}, err
		}
	}
	if st.Paid > 0 && st.BalanceAfter == 0 {
		if err := appendOrgEvent(ctx, tx, exhaustedEvent(st)); err != nil {
			return Settlement{}, err
		}
	}
	sb.BilledMicros += st.Paid
	sb.UnbilledNanos, sb.LastSettledAt = b.carry, to
	return st, nil
}

// settleOneStatement is PostgreSQL's settlement: one statement that locks
// the sandbox's row (only if it is still as read), then its org's, takes
// what the balance can pay, and writes the org, the sandbox and the
// settlement. It answers errStale when the row had changed.
func (s *Store) settleOneStatement(ctx context.Context, sb sbx.Sandbox, now time.Time, table pricing.Table) (Settlement, error) {
	b := newBill(table, sb, sb.State, now)
	if b.to.IsZero() {
		return Settlement{}, nil
	}
	var paid, balance int64
	var id *int64
	err := s.read(ctx).row(ctx, `
		WITH sb AS (
			SELECT id, org_id FROM sandboxes
			WHERE id = ? AND last_settled_at = ? AND state = ? FOR NO KEY UPDATE
		), o AS (
			SELECT orgs.id, orgs.balance_micros AS old FROM orgs JOIN sb ON orgs.id = sb.org_id FOR NO KEY UPDATE OF orgs
		), u AS (
			UPDATE orgs SET balance_micros = o.old - LEAST(o.old, CAST(? AS BIGINT)) FROM o WHERE orgs.id = o.id
			RETURNING LEAST(o.old, CAST(? AS BIGINT)) AS paid, orgs.balance_micros AS balance
		), s AS (
			UPDATE sandboxes SET billed_micros = billed_micros + u.paid, unbilled_nanos = ?, last_settled_at = ?
			FROM u, sb WHERE sandboxes.id = sb.id
			RETURNING sandboxes.id
		), split AS (
			SELECT u.paid, u.balance, c.cpu, m.mem, g.gpu, u.paid - c.cpu - m.mem - g.gpu AS storage FROM u
			CROSS JOIN LATERAL (SELECT LEAST(CAST(? AS BIGINT), u.paid) AS cpu) c
			CROSS JOIN LATERAL (SELECT LEAST(CAST(? AS BIGINT), u.paid - c.cpu) AS mem) m
			CROSS JOIN LATERAL (SELECT LEAST(CAST(? AS BIGINT), u.paid - c.cpu - m.mem) AS gpu) g
		), ins AS (
			INSERT INTO settlements (org_id, sandbox_id, state, from_at, to_at, cpu_micros, memory_micros,
				gpu_micros, storage_micros, micros, balance_after)
			SELECT ?, ?, ?, ?, ?, cpu, mem, gpu, storage, paid, balance FROM split WHERE CAST(? AS BIGINT) > 0
			RETURNING id
		)
		SELECT u.paid, u.balance, (SELECT id FROM ins) FROM u`,
		sb.ID, sb.LastSettledAt.UnixMicro(), string(sb.State),
		b.owed, b.owed,
		b.carry, now.UnixMicro(),
		b.parts[0], b.parts[1], b.parts[2],
		sb.OrgID, sb.ID, string(sb.State), sb.LastSettledAt.UnixMicro(), now.UnixMicro(), b.owed,
	).Scan(&paid, &balance, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return Settlement{}, errStale
	}
	if err != nil {
		return Settlement{}, err
	}
	st := b.settlement(sb, sb.State, paid, balance)
	if id != nil {
		st.ID = *id
	}
	if paid > 0 && balance == 0 {
		// This settlement took the last credit (only one can: the next
		// pays nothing). Its event is written just after, not with it:
		// the settlement is one statement outside a transaction.
		if err := s.write(ctx, func(tx db) error { return appendOrgEvent(ctx, tx, exhaustedEvent(st)) }); err != nil {
			return st, err
		}
	}
	return st, nil
}

// exhaustedEvent is the event of settlement st, which took an org's last
// credit.
func exhaustedEvent(st Settlement) sbx.OrgEvent {
	return creditEvent(st.OrgID, sbx.EventCreditsExhausted, st.To, map[string]any{"balance": 0, "sandbox": st.SandboxID, "micros": st.Paid})
}

// billingRow reads what a settlement needs of a sandbox.
func billingRow(ctx context.Context, q db, id string) (sbx.Sandbox, error) {
	sb := sbx.Sandbox{ID: id}
	var state, gpuType string
	var gpuCount, gpuFraction int
	var created int64
	var settled sql.NullInt64
	err := q.row(ctx, readBillingRow, id).
		Scan(&sb.OrgID, &state, &sb.Resources.MilliCPU, &sb.Resources.MemoryMB, &gpuType, &gpuCount, &gpuFraction,
			&sb.BilledMicros, &sb.UnbilledNanos, &settled, &created, &sb.Pool)
	if errors.Is(err, sql.ErrNoRows) {
		return sb, sbx.Errorf(sbx.ENotFound, "sandbox %s not found", id)
	}
	if err != nil {
		return sb, err
	}
	sb.State, sb.CreatedAt, sb.LastSettledAt = sbx.State(state), time.UnixMicro(created).UTC(), fromMicros(settled)
	if gpuCount > 0 {
		sb.Resources.GPU = &sbx.GPURequest{Type: gpuType, Count: gpuCount, Fraction: gpuFraction}
	}
	return sb, nil
}

// bill is what a sandbox owes for [from, to), in micro-credits, and what
// it will owe below one micro-credit.
type bill struct {
	from, to time.Time // zero to: nothing to settle
	owed     int64
	parts    [4]int64 // cpu, memory, gpu, storage; they sum to owed
	carry    int64    // nano-credits
}

func newBill(table pricing.Table, sb sbx.Sandbox, state sbx.State, to time.Time) bill {
	if sb.Pool != "" && state == sbx.StateRunning { // a warm pool's member, waiting: at the paused rate
		state = sbx.StatePaused
	}
	from := sb.LastSettledAt
	if from.IsZero() {
		from = sb.CreatedAt
	}
	if !to.After(from) {
		return bill{}
	}
	c := table.Cost(sb.Provider, sb.Resources, state, from, to)
	total := sb.UnbilledNanos + c.Total()
	b := bill{from: from, to: to, owed: total / 1000, carry: total % 1000}
	nanos := [4]int64{c.CPU, c.Memory, c.GPU, c.Storage}
	largest, sum := 0, int64(0)
	for i, n := range nanos {
		b.parts[i] = n / 1000
		sum += b.parts[i]
		if n > nanos[largest] {
			largest = i
		}
	}
	b.parts[largest] += b.owed - sum // the carried nanos and the rounding
	return b
}

// settlement is the record of paying paid of b, leaving balance.
func (b bill) settlement(sb sbx.Sandbox, state sbx.State, paid, balance int64) Settlement {
	st := Settlement{OrgID: sb.OrgID, SandboxID: sb.ID, State: state, From: b.from, To: b.to, Paid: paid, Owed: b.owed, BalanceAfter: balance}
	left := paid
	for i, p := range []*int64{&st.CPU, &st.Memory, &st.GPU, &st.Storage} {
		*p = min(b.parts[i], left)
		left -= *p
	}
	return st
}

// Settlements lists org's newest settlements, at most limit (1..1000).
func (s *Store) Settlements(ctx context.Context, orgID string, limit int) ([]Settlement, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT id, sandbox_id, state, from_at, to_at, cpu_micros, memory_micros, gpu_micros,
		storage_micros, micros, balance_after FROM settlements WHERE org_id = ? ORDER BY id DESC LIMIT ?`, orgID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Settlement{}
	for rows.Next() {
		st := Settlement{OrgID: orgID}
		var state string
		var from, to int64
		if err := rows.Scan(&st.ID, &st.SandboxID, &state, &from, &to, &st.CPU, &st.Memory, &st.GPU, &st.Storage,
			&st.Paid, &st.BalanceAfter); err != nil {
			return nil, err
		}
		st.State, st.From, st.To = sbx.State(state), time.UnixMicro(from).UTC(), time.UnixMicro(to).UTC()
		out = append(out, st)
	}
	return out, rows.Err()
}

// Spend is sbx.Spend.
type Spend = sbx.Spend

// Spending sums org's settlements whose interval ends in (from, to], per
// sandbox, largest first.
func (s *Store) Spending(ctx context.Context, orgID string, from, to time.Time) ([]Spend, error) {
	rows, err := s.read(ctx).query(ctx, `
		SELECT sb.project_id, sb.id, sb.provider_sandbox_id, sb.kind, sb.provider,
			CAST(sum(st.cpu_micros) AS BIGINT), CAST(sum(st.memory_micros) AS BIGINT), CAST(sum(st.gpu_micros) AS BIGINT),
			CAST(sum(st.storage_micros) AS BIGINT), CAST(sum(st.micros) AS BIGINT) AS total
		FROM settlements st JOIN sandboxes sb ON sb.id = st.sandbox_id
		WHERE st.org_id = ? AND st.to_at > ? AND st.to_at <= ?
		GROUP BY sb.project_id, sb.id, sb.provider_sandbox_id, sb.kind, sb.provider
		ORDER BY total DESC, sb.id`, orgID, from.UnixMicro(), to.UnixMicro())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Spend{}
	for rows.Next() {
		var sp Spend
		var kind string
		if err := rows.Scan(&sp.ProjectID, &sp.SandboxID, &sp.ProviderSandboxID, &kind, &sp.Provider, &sp.CPU, &sp.Memory,
			&sp.GPU, &sp.Storage, &sp.Total); err != nil {
			return nil, err
		}
		sp.Kind = sbx.Kind(kind)
		out = append(out, sp)
	}
	return out, rows.Err()
}

// Accrued is what sb owes since its last settlement, at now and table's
// prices, in micro-credits: its running credits.
func Accrued(table pricing.Table, sb sbx.Sandbox, now time.Time) int64 {
	return newBill(table, sb, sb.State, now).owed
}
