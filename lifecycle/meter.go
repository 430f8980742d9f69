package lifecycle

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/pricing"
)

// DefaultMeterInterval is how often the meter settles when not told.
const DefaultMeterInterval = 10 * time.Second

// RunMeter settles every running and paused sandbox each interval until
// ctx ends. State changes settle on their own, in the ledger.
func (m *Manager) RunMeter(ctx context.Context, every time.Duration) {
	for {
		m.Meter(ctx)
		select {
		case <-ctx.Done():
			return
		case <-m.clock.After(every):
		}
	}
}

// Meter settles every billable sandbox once, at the manager's now, then
// pauses the running sandboxes of orgs left without credits, with
// pause_reason insufficient_credits.
func (m *Manager) Meter(ctx context.Context) {
	table, err := m.store.Rates(ctx)
	if err != nil {
		m.logLoop(ctx, "meter: reading the rates", err)
		return
	}
	ids, err := m.store.Billable(ctx)
	if err != nil {
		m.logLoop(ctx, "meter: listing billable sandboxes", err)
		return
	}
	m.settleAll(ctx, ids, table)
	m.PauseUnfunded(ctx)
}

func (m *Manager) settleAll(ctx context.Context, ids []string, table pricing.Table) {
	now := m.clock.Now()
	for _, id := range ids {
		if _, err := m.store.Settle(ctx, id, now, table); err != nil {
			m.logLoop(ctx, "meter: settling", err, "sandbox", id)
		}
	}
}

// PauseUnfunded pauses, with pause_reason insufficient_credits, every
// running sandbox of an org whose balance is empty.
func (m *Manager) PauseUnfunded(ctx context.Context) {
	ids, err := m.store.Unfunded(ctx)
	if err != nil {
		m.logLoop(ctx, "meter: listing unfunded sandboxes", err)
		return
	}
	for _, id := range ids {
		if _, err := m.pause(ctx, id, sbx.PauseInsufficientCredits); err != nil && sbx.ErrorCode(err) != sbx.EConflict {
			m.log.Warn("meter: pausing a sandbox out of credits", "sandbox", id, "err", err)
		}
	}
}

// pricesTTL is how long Running uses the prices it read.
const pricesTTL = time.Second

// pricesReadTimeout bounds the read of the prices a render waits on.
const pricesReadTimeout = 2 * time.Second

// Running is what sb has accrued since its last settlement, at the
// manager's now and the prices of at most pricesTTL ago: its running
// credits, in micro-credits.
func (m *Manager) Running(sb sbx.Sandbox) int64 {
	now := m.clock.Now()
	m.pricesMu.Lock()
	if m.prices == nil || now.Sub(m.pricesAt) > pricesTTL {
		// A bounded read: a renderer waits on it, under the lock.
		ctx, cancel := context.WithTimeout(context.Background(), pricesReadTimeout)
		if table, err := m.store.Rates(ctx); err == nil {
			m.prices, m.pricesAt = table, now
		} else if m.prices == nil {
			m.prices = pricing.Default()
		}
		cancel()
	}
	table := m.prices
	m.pricesMu.Unlock()
	return ledger.Accrued(table, sb, now)
}

// checkFunded refuses work that would spend credits an org does not have.
func (m *Manager) checkFunded(ctx context.Context, orgID, verb string) error {
	balance, err := m.store.Balance(ctx, orgID)
	if err != nil {
		return err
	}
	if balance <= 0 {
		return sbx.Errorf(sbx.ENoCredits, "cannot %s: the org has no credits left (balance %s); top up its credits first",
			verb, pricing.FormatMicros(balance))
	}
	return nil
}

// logLoop logs a background loop's failure, unless the loop is stopping.
func (m *Manager) logLoop(ctx context.Context, msg string, err error, args ...any) {
	if ctx.Err() == nil {
		m.log.Error(msg, append([]any{"err", err}, args...)...)
	}
}
