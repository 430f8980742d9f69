package lifecycle

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/pricing"
)

// The core's reads of credits: what a sandbox has accrued since the meter
// last settled it (Running, for its render), and the check that an org has
// credits before work that spends them (a create, a resume).

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
