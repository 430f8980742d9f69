package lifecycle

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
)

// reapEvery is the longest the reaper sleeps, so an expiry is acted on within it.
const reapEvery = 500 * time.Millisecond

// RunReaper enforces timeouts until ctx ends: at expiry a sandbox is killed
// (end reason timeout) or, with autoPause, paused with pause_reason timeout.
// It also hibernates sandboxes left paused longer than the idle policy allows.
func (m *Manager) RunReaper(ctx context.Context) {
	for {
		m.Reap(ctx)
		wait := reapEvery
		if next, err := m.store.NextExpiry(ctx); err == nil && !next.IsZero() {
			if d := next.Sub(m.clock.Now()); d < wait {
				wait = max(d, 0)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		case <-m.clock.After(wait):
		}
	}
}

// Reap acts once on every sandbox expired at the manager's now.
func (m *Manager) Reap(ctx context.Context) {
	expired, err := m.store.Expired(ctx, m.clock.Now())
	if err != nil {
		m.logLoop(ctx, "reaper: listing expired sandboxes", err)
		return
	}
	for _, sb := range expired {
		if sb.AutoPause {
			_, err = m.pause(ctx, sb.ID, sbx.PauseTimeout)
		} else {
			_, err = m.kill(ctx, sb.ID, sbx.EndTimeout)
		}
		if err != nil && sbx.ErrorCode(err) != sbx.EConflict {
			m.log.Warn("reaper: enforcing timeout", "sandbox", sb.ID, "err", err)
		}
	}
	m.hibernateIdle(ctx)
}

// hibernateIdle applies the idle policy: a sandbox paused in memory for
// HibernateAfter is hibernated, so that it holds no host memory.
func (m *Manager) hibernateIdle(ctx context.Context) {
	if m.cfg.HibernateAfter <= 0 {
		return
	}
	idle, err := m.store.IdlePaused(ctx, m.clock.Now().Add(-m.cfg.HibernateAfter))
	if err != nil {
		m.logLoop(ctx, "reaper: listing idle sandboxes", err)
		return
	}
	for _, sb := range idle {
		if m.canHibernate(sb) != nil {
			continue
		}
		if _, err := m.hibernate(ctx, sb.ID, sb.PauseReason); err != nil && sbx.ErrorCode(err) != sbx.EConflict {
			m.log.Warn("reaper: hibernating an idle sandbox", "sandbox", sb.ID, "err", err)
		}
	}
}
