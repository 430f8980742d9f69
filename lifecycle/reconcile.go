package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/telemetry"
)

// Reconcile brings the ledger and every provider into agreement after a start:
// compute the provider still holds is adopted, sandboxes it lost become failed
// with a diagnostic, interrupted operations are finished, and compute no
// ledger row owns is destroyed; template builds a stop cut short fail. A
// provider that cannot be reconciled is reported and left as it is; the
// others still are.
func (m *Manager) Reconcile(ctx context.Context) error {
	var errs []error
	for name, p := range m.providers {
		if err := m.reconcile(ctx, p, nil); err != nil {
			errs = append(errs, fmt.Errorf("reconcile %s: %w", name, err))
		}
	}
	if err := m.reconcileBuilds(ctx); err != nil {
		errs = append(errs, fmt.Errorf("reconcile template builds: %w", err))
	}
	return errors.Join(errs...)
}

// reconcile settles p's open rows (only those of them, when only is not
// nil) against what p holds, and destroys what no open row owns.
func (m *Manager) reconcile(ctx context.Context, p sbx.Provider, only map[string]bool) error {
	insts, err := p.List(ctx)
	if err != nil {
		return err
	}
	held := map[string]sbx.Instance{}
	var orphans []sbx.Instance // compute that no open row owns
	for _, in := range insts {
		if in.SandboxID == "" {
			orphans = append(orphans, in)
		} else {
			held[in.SandboxID] = in
		}
	}
	rows, err := m.store.OpenSandboxes(ctx, p.Name())
	if err != nil {
		return err
	}
	owners := m.owners()
	for _, sb := range rows {
		in, ok := held[sb.ID]
		delete(held, sb.ID)
		if only != nil && !only[sb.ID] {
			continue
		}
		live, err := owners.live(ctx, sb)
		if err != nil {
			return err
		}
		if live { // another serve's, or this one's: it settles it
			continue
		}
		if err := m.settleRow(ctx, p, sb, in, ok); err != nil {
			return err
		}
	}
	for _, in := range held {
		orphans = append(orphans, in)
	}
	for _, in := range orphans {
		m.log.Warn("reconcile: destroying compute the ledger does not own", "provider", p.Name(), "sandbox", in.SandboxID, "provider_id", in.ProviderSandboxID)
		if err := p.Kill(ctx, in.Handle); err != nil {
			return fmt.Errorf("destroying orphan %s: %w", in.ProviderSandboxID, err)
		}
		telemetry.Reconciled("orphan_killed")
	}
	if err := m.reconcileSnapshots(ctx, p); err != nil {
		return err
	}
	return m.reconcileVolumes(ctx, p)
}

// settleRow decides one open row given whether the provider still holds it.
func (m *Manager) settleRow(ctx context.Context, p sbx.Provider, sb sbx.Sandbox, in sbx.Instance, held bool) error {
	switch {
	case sb.Intent == sbx.IntentKilling || sb.State.Final():
		if held {
			if err := p.Kill(ctx, in.Handle); err != nil {
				return err
			}
		}
		telemetry.Reconciled("finished_kill")
		return m.settle(ctx, sb.ID, "killed", "finished after restart", func(sb *sbx.Sandbox) {
			if sb.State != sbx.StateFailed {
				sb.State = sbx.StateKilled
			}
			if sb.EndedAt.IsZero() {
				sb.EndedAt = m.clock.Now()
			}
			sb.ExpiresAt = time.Time{}
		})
	case sb.Intent == sbx.IntentCreating && sb.SnapshotID != "":
		// A restore whose agent may still hold its source's token and env
		// is no sandbox of its own: it goes.
		if held {
			if err := p.Kill(ctx, in.Handle); err != nil {
				return err
			}
		}
		telemetry.Reconciled("restore_interrupted")
		m.fail(ctx, sb.ID, sbx.EndError, "its restore from snapshot "+sb.SnapshotID+" was interrupted by a restart of sbx")
		return nil
	case !held:
		diag := fmt.Sprintf("provider %s no longer has this sandbox: it was lost while sbx was not running (it was %s", p.Name(), sb.State)
		if sb.Intent != sbx.IntentNone {
			diag += ", " + string(sb.Intent) + " was interrupted"
		}
		telemetry.Reconciled("lost")
		m.fail(ctx, sb.ID, sbx.EndLost, diag+")")
		return nil
	case sb.Intent == sbx.IntentCreating && !m.readyCompute(ctx, p, sb, in):
		// Its create stopped before the compute ran with a ready agent
		// (a claim without its pod, an agent never handed its token).
		if err := p.Kill(ctx, in.Handle); err != nil {
			return err
		}
		telemetry.Reconciled("create_interrupted")
		m.fail(ctx, sb.ID, sbx.EndError, fmt.Sprintf("its create was interrupted by the end of the serve running it, before the sandbox ran (%s on provider %s)", in.Status, p.Name()))
		return nil
	case sb.Intent == sbx.IntentResuming && in.Status == sbx.InstanceRunning && !m.readyCompute(ctx, p, sb, in):
		// Its resume booted compute whose agent never got ready (a new
		// pod never handed its token): paused again, for a resume to
		// finish.
		if err := p.Pause(ctx, in.Handle); err != nil {
			return err
		}
		telemetry.Reconciled("resume_interrupted")
		return m.settle(ctx, sb.ID, "resume_failed", "its resume was interrupted by the end of the serve running it; it is paused", func(sb *sbx.Sandbox) {
			sb.State, sb.ExpiresAt = sbx.StatePaused, time.Time{}
		})
	case in.Status == sbx.InstanceDead:
		if err := p.Kill(ctx, in.Handle); err != nil {
			return err
		}
		telemetry.Reconciled("dead")
		m.fail(ctx, sb.ID, sbx.EndError, fmt.Sprintf("provider %s reports the sandbox stopped running while sbx was not running", p.Name()))
		return nil
	}
	telemetry.Reconciled("adopted")
	return m.settle(ctx, sb.ID, "adopted", fmt.Sprintf("found %s after restart", in.Status), func(sb *sbx.Sandbox) {
		now := m.clock.Now()
		sb.Handle = in.Handle
		if in.ProviderSandboxID != "" {
			sb.ProviderSandboxID = in.ProviderSandboxID
		}
		if sb.StartedAt.IsZero() {
			sb.StartedAt = now
		}
		if in.Status == sbx.InstancePaused || in.Status == sbx.InstanceHibernated {
			if sb.State != sbx.StatePaused {
				sb.State, sb.PauseReason, sb.PausedAt = sbx.StatePaused, sbx.PauseUser, now
			}
			sb.ExpiresAt, sb.Hibernated = time.Time{}, in.Status == sbx.InstanceHibernated
			return
		}
		if sb.State != sbx.StateRunning || sb.ExpiresAt.IsZero() {
			sb.State, sb.PauseReason, sb.ExpiresAt = sbx.StateRunning, "", now.Add(sb.Timeout)
		}
		sb.Hibernated = false
	})
}

// owners answers whether operation owners are live, asking the ledger once
// per owner within one pass of reconcile (a replica's many operations in
// flight share its owner).
type owners struct {
	m    *Manager
	seen map[string]bool
}

func (m *Manager) owners() *owners { return &owners{m: m, seen: map[string]bool{}} }

// live reports whether sb's operation in flight belongs to a serve that
// still runs it: this one, or another sharing the ledger (a replica),
// which holds its owner ID live. A row with no intent has none.
func (o *owners) live(ctx context.Context, sb sbx.Sandbox) (bool, error) {
	if sb.Intent == sbx.IntentNone || sb.OpOwner == "" {
		return false, nil
	}
	if sb.OpOwner == o.m.owner {
		return true, nil
	}
	if live, ok := o.seen[sb.OpOwner]; ok {
		return live, nil
	}
	live, err := o.m.store.Holds(ctx, sb.OpOwner)
	if err == nil {
		o.seen[sb.OpOwner] = live
	}
	return live, err
}

// readyCompute reports whether compute an interrupted create or resume
// left is running with an agent that answers (or runs none): the operation
// got as far as a usable sandbox.
func (m *Manager) readyCompute(ctx context.Context, p sbx.Provider, sb sbx.Sandbox, in sbx.Instance) bool {
	if in.Status != sbx.InstanceRunning {
		return false
	}
	sb.Handle = in.Handle
	ready, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return m.agentReady(ready, sb) == nil
}

// ReconcileStranded settles the operations in flight whose serve is gone
// (a replica that died mid-create, mid-pause…), which no start of this
// serve reconciled: for each provider with such rows, a reconcile of those
// rows (and of compute no row owns). The serve that leads runs it now and
// then.
func (m *Manager) ReconcileStranded(ctx context.Context) error {
	var errs []error
	for name, p := range m.providers {
		rows, err := m.store.OpenSandboxes(ctx, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		stranded, owners := map[string]bool{}, m.owners()
		for _, sb := range rows {
			if live, err := owners.live(ctx, sb); err == nil && !live && sb.Intent != sbx.IntentNone {
				m.log.Warn("reconcile: an operation whose serve is gone", "provider", name, "sandbox", sb.ID, "intent", sb.Intent, "owner", sb.OpOwner)
				stranded[sb.ID] = true
			}
		}
		if len(stranded) > 0 {
			if err := m.reconcile(ctx, p, stranded); err != nil {
				errs = append(errs, fmt.Errorf("reconcile %s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// settle clears a row's intent, applies fn and records step.
func (m *Manager) settle(ctx context.Context, id, step, detail string, fn func(*sbx.Sandbox)) error {
	_, err := m.update(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		fn(sb)
		sb.Intent, sb.UpdatedAt = sbx.IntentNone, m.clock.Now()
		return []sbx.Event{m.event(step, detail)}, nil
	})
	return err
}

// RunStranded runs ReconcileStranded every interval until ctx ends: the
// serve that leads settles what a replica that died left in flight.
func (l *Loops) RunStranded(ctx context.Context, every time.Duration) {
	for {
		if err := l.m.ReconcileStranded(ctx); err != nil && ctx.Err() == nil {
			l.m.log.Error("reconciling stranded operations", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-l.m.clock.After(every):
		}
	}
}
