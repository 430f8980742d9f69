package lifecycle

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/telemetry"
)

// reapEvery is the longest the reaper sleeps, so an expiry is acted on within it.
const reapEvery = 500 * time.Millisecond

// RunReaper enforces timeouts until ctx ends: at expiry a sandbox is killed
// (end reason timeout) or, with autoPause, paused with pause_reason timeout.
// It also hibernates sandboxes left paused longer than the idle policy allows.
func (l *Loops) RunReaper(ctx context.Context) {
	for {
		l.Reap(ctx)
		wait := reapEvery
		if next, err := l.store.NextExpiry(ctx); err == nil && !next.IsZero() {
			if d := next.Sub(l.m.clock.Now()); d < wait {
				wait = max(d, 0)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-l.m.wake:
		case <-l.m.clock.After(wait):
		}
	}
}

// Reap acts once on every sandbox expired at the manager's now.
func (l *Loops) Reap(ctx context.Context) {
	expired, err := l.store.Expired(ctx, l.m.clock.Now())
	if err != nil {
		l.logLoop(ctx, "reaper: listing expired sandboxes", err)
		return
	}
	for _, sb := range expired {
		if sb.AutoPause {
			_, err = l.m.pause(ctx, sb.ID, sbx.PauseTimeout)
			reaped("pause_expired", err)
		} else {
			_, err = l.m.kill(ctx, sb.ID, sbx.EndTimeout)
			reaped("kill_expired", err)
		}
		if err != nil && sbx.ErrorCode(err) != sbx.EConflict {
			l.m.log.Warn("reaper: enforcing timeout", "sandbox", sb.ID, "err", err)
		}
	}
	l.hibernateIdle(ctx)
}

// hibernateIdle applies the idle policy: a sandbox paused in memory for
// HibernateAfter is hibernated, so that it holds no host memory.
func (l *Loops) hibernateIdle(ctx context.Context) {
	if l.m.cfg.HibernateAfter <= 0 {
		return
	}
	idle, err := l.store.IdlePaused(ctx, l.m.clock.Now().Add(-l.m.cfg.HibernateAfter))
	if err != nil {
		l.logLoop(ctx, "reaper: listing idle sandboxes", err)
		return
	}
	for _, sb := range idle {
		if l.m.canHibernate(sb) != nil {
			continue
		}
		_, err := l.m.hibernate(ctx, sb.ID, sb.PauseReason)
		reaped("hibernate_idle", err)
		if err != nil && sbx.ErrorCode(err) != sbx.EConflict {
			l.m.log.Warn("reaper: hibernating an idle sandbox", "sandbox", sb.ID, "err", err)
		}
	}
}

// reaped records an action of the loops on a sandbox for the metrics; a
// conflict (another change got there first) is no action.
func reaped(action string, err error) {
	if sbx.ErrorCode(err) != sbx.EConflict {
		telemetry.Reaped(action, err)
	}
}
