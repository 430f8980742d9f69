package lifecycle

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/pricing"
	"github.com/sbxdev/sbx/telemetry"
)

// Loops are the background loops over the sandbox core (Manager) that one
// serve of a ledger runs at a time: the meter (RunMeter: settling, and
// pausing orgs out of credits) and the reaper (RunReaper: expiries and the
// idle policy's hibernation, reaper.go). They read the ledger through their
// own LoopStore; every change of a sandbox goes through the core.
type Loops struct {
	m     *Manager
	store LoopStore
}

// NewLoops returns the loops over the core m and their store.
func NewLoops(m *Manager, store LoopStore) *Loops { return &Loops{m: m, store: store} }

// DefaultMeterInterval is how often the meter settles when not told.
const DefaultMeterInterval = 10 * time.Second

// RunMeter settles every running and paused sandbox, and what every
// snapshot and volume holds, each interval until ctx ends. State changes settle on their own, in the ledger.
func (l *Loops) RunMeter(ctx context.Context, every time.Duration) {
	for {
		l.Meter(ctx)
		select {
		case <-ctx.Done():
			return
		case <-l.m.clock.After(every):
		}
	}
}

// Meter settles every billable sandbox once, at the manager's now, then
// pauses the running sandboxes of orgs left without credits, with
// pause_reason insufficient_credits.
func (l *Loops) Meter(ctx context.Context) {
	table, err := l.store.Rates(ctx)
	if err != nil {
		l.logLoop(ctx, "meter: reading the rates", err)
		return
	}
	ids, err := l.store.Billable(ctx)
	if err != nil {
		l.logLoop(ctx, "meter: listing billable sandboxes", err)
		return
	}
	l.settleAll(ctx, ids, table)
	l.settleStorage(ctx)
	l.PauseUnfunded(ctx)
}

// settleStorage settles what every snapshot and volume holds.
func (l *Loops) settleStorage(ctx context.Context) {
	now := l.m.clock.Now()
	snaps, err := l.store.OpenSnapshots(ctx, "")
	if err != nil {
		l.logLoop(ctx, "meter: listing snapshots", err)
	}
	for _, sn := range snaps {
		st, err := l.store.SettleSnapshot(ctx, sn.ID, now)
		telemetry.Settled("snapshot", st.Paid, err)
		if err != nil {
			l.logLoop(ctx, "meter: settling a snapshot", err, "snapshot", sn.ID)
		}
	}
	vols, err := l.store.LiveVolumes(ctx, "")
	if err != nil {
		l.logLoop(ctx, "meter: listing volumes", err)
	}
	for _, v := range vols {
		st, err := l.store.SettleVolume(ctx, v.ID, now)
		telemetry.Settled("volume", st.Paid, err)
		if err != nil {
			l.logLoop(ctx, "meter: settling a volume", err, "volume", v.ID)
		}
	}
}

func (l *Loops) settleAll(ctx context.Context, ids []string, table pricing.Table) {
	now := l.m.clock.Now()
	for _, id := range ids {
		st, err := l.store.Settle(ctx, id, now, table)
		telemetry.Settled("sandbox", st.Paid, err)
		if err != nil {
			l.logLoop(ctx, "meter: settling", err, "sandbox", id)
		}
	}
}

// PauseUnfunded pauses, with pause_reason insufficient_credits, every
// running sandbox of an org whose balance is empty.
func (l *Loops) PauseUnfunded(ctx context.Context) {
	ids, err := l.store.Unfunded(ctx)
	if err != nil {
		l.logLoop(ctx, "meter: listing unfunded sandboxes", err)
		return
	}
	for _, id := range ids {
		_, err := l.m.pause(ctx, id, sbx.PauseInsufficientCredits)
		reaped("pause_unfunded", err)
		if err != nil && sbx.ErrorCode(err) != sbx.EConflict {
			l.m.log.Warn("meter: pausing a sandbox out of credits", "sandbox", id, "err", err)
		}
	}
}

// logLoop logs a background loop's failure, unless the loop is stopping.
func (l *Loops) logLoop(ctx context.Context, msg string, err error, args ...any) {
	if ctx.Err() == nil {
		l.m.log.Error(msg, append([]any{"err", err}, args...)...)
	}
}
