package ledger

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/pricing"
)

// StorageSettlement is sbx.StorageSettlement.
type StorageSettlement = sbx.StorageSettlement

// held is storage a snapshot or a volume holds, and its credit fields,
// which settleHeld moves on.
type held struct {
	kind                 sbx.StorageKind
	rate                 pricing.Resource
	id, orgID, projectID string
	provider             string
	bytes                int64
	billed, unbilled     *int64
	settled              *time.Time
}

// settleHeld takes what h owes since its last settlement, up to now, from
// its org's balance (what the balance can pay), records the settlement and
// moves h's credit fields on. The zero settlement: no time to settle.
func (s *Store) settleHeld(ctx context.Context, tx db, h held, now time.Time) (StorageSettlement, error) {
	if !now.After(*h.settled) {
		return StorageSettlement{}, nil
	}
	table, err := rates(ctx, tx)
	if err != nil {
		return StorageSettlement{}, err
	}
	nanos := *h.unbilled + table.HeldCost(h.rate, h.bytes, *h.settled, now)
	owed := nanos / 1000
	var balance int64
	if err := tx.row(ctx, readBalance+tx.forUpdate(), h.orgID).Scan(&balance); err != nil {
		return StorageSettlement{}, err
	}
	paid := min(balance, owed)
	st := StorageSettlement{OrgID: h.orgID, ProjectID: h.projectID, Provider: h.provider, Kind: h.kind, ResourceID: h.id,
		Bytes: h.bytes, From: *h.settled, To: now, Paid: paid, Owed: owed, BalanceAfter: balance - paid}
	if paid > 0 {
		if _, err := tx.exec(ctx, takeBalance, paid, h.orgID); err != nil {
			return StorageSettlement{}, err
		}
	}
	if owed > 0 {
		err := tx.row(ctx, `INSERT INTO storage_settlements (org_id, project_id, provider, kind, resource_id, bytes, from_at, to_at,
			micros, balance_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			st.OrgID, st.ProjectID, st.Provider, string(st.Kind), st.ResourceID, st.Bytes, st.From.UnixMicro(), st.To.UnixMicro(),
			st.Paid, st.BalanceAfter).Scan(&st.ID)
		if err != nil {
			return StorageSettlement{}, err
		}
	}
	*h.billed += paid
	*h.unbilled, *h.settled = nanos%1000, now
	return st, nil
}

// StorageSpending sums org's storage settlements whose interval ends in
// (from, to], per project, kind and provider.
func (s *Store) StorageSpending(ctx context.Context, orgID string, from, to time.Time) ([]sbx.StorageSpend, error) {
	rows, err := s.read(ctx).query(ctx, `SELECT project_id, kind, provider, CAST(sum(micros) AS BIGINT) AS total
		FROM storage_settlements WHERE org_id = ? AND to_at > ? AND to_at <= ?
		GROUP BY project_id, kind, provider ORDER BY total DESC, project_id, kind`, orgID, from.UnixMicro(), to.UnixMicro())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []sbx.StorageSpend{}
	for rows.Next() {
		var sp sbx.StorageSpend
		var kind string
		if err := rows.Scan(&sp.ProjectID, &kind, &sp.Provider, &sp.Total); err != nil {
			return nil, err
		}
		sp.Kind = sbx.StorageKind(kind)
		out = append(out, sp)
	}
	return out, rows.Err()
}
