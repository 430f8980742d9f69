package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/sbxdev/sbx"
)

// step is one provider operation on a sandbox: which states allow it, the
// intent and timeline step written before the provider is called, the call,
// and how the outcome settles the row.
type step struct {
	verb    string      // for messages: "pause", "resume", "delete"
	from    []sbx.State // states the operation may start from
	intent  sbx.Intent
	begin   string                                                        // timeline step written with the intent
	check   func(sb *sbx.Sandbox) error                                   // optional: more conditions on the row
	prepare func(sb *sbx.Sandbox)                                         // optional: changes written with the intent
	call    func(context.Context, sbx.Provider, sbx.Sandbox) (any, error) // the provider call
	settle  func(sb *sbx.Sandbox, result any)                             // applies a successful outcome
	done    string                                                        // timeline step written with the outcome
}

// run applies st to the sandbox with sbx UUID id: lock, check and write the
// intent, call the provider, settle. A provider failure clears the intent,
// records the failure in the timeline and leaves the state as it was.
func (m *Manager) run(ctx context.Context, id string, st step) (sbx.Sandbox, error) {
	unlock, err := m.lock(ctx, id)
	if err != nil {
		return sbx.Sandbox{}, err
	}
	defer unlock()
	sb, err := m.update(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		if err := allowed(sb, st.verb, st.from); err != nil {
			return nil, err
		}
		if st.check != nil {
			if err := st.check(sb); err != nil {
				return nil, err
			}
		}
		sb.Intent, sb.UpdatedAt = st.intent, m.clock.Now()
		if st.prepare != nil {
			st.prepare(sb)
		}
		return []sbx.Event{m.event(st.begin, "")}, nil
	})
	if err != nil {
		return sb, err
	}
	// The provider call and its settlement must not be cut short by a caller
	// who hangs up: the ledger would be left with an intent to reconcile.
	ctx = context.WithoutCancel(ctx)
	var result any
	p, callErr := m.provider(sb.Provider)
	if callErr == nil || sb.Handle.IsZero() { // with no compute, a kill needs no provider
		result, callErr = st.call(ctx, p, sb)
	}
	sb, err = m.update(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.Intent, sb.UpdatedAt = sbx.IntentNone, m.clock.Now()
		if callErr != nil {
			return []sbx.Event{m.event(st.verb+"_failed", providerMessage(callErr))}, nil
		}
		st.settle(sb, result)
		return []sbx.Event{m.event(st.done, "")}, nil
	})
	if err != nil {
		return sb, err
	}
	if callErr != nil {
		m.log.Warn("provider operation failed", "op", st.verb, "sandbox", id, "err", callErr)
		return sb, sbx.Errorf(sbx.EProvider, "could not %s sandbox %s: %s", st.verb, sb.ProviderSandboxID, providerMessage(callErr))
	}
	m.notifyReaper()
	return sb, nil
}

// allowed answers a 409 naming the current state when verb cannot start from it.
func allowed(sb *sbx.Sandbox, verb string, from []sbx.State) error {
	if sb.Intent != sbx.IntentNone {
		return sbx.Errorf(sbx.EConflict, "cannot %s sandbox %s: it is %s (%s in progress)", verb, sb.ProviderSandboxID, sb.State, sb.Intent)
	}
	for _, s := range from {
		if sb.State == s {
			return nil
		}
	}
	return sbx.Errorf(sbx.EConflict, "cannot %s sandbox %s: it is %s", verb, sb.ProviderSandboxID, sb.State)
}

// Pause suspends a running sandbox for reason.
func (m *Manager) Pause(ctx context.Context, c sbx.Caller, ref string, reason sbx.PauseReason) (sbx.Sandbox, error) {
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sb, err
	}
	return m.pause(ctx, sb.ID, reason)
}

func (m *Manager) pause(ctx context.Context, id string, reason sbx.PauseReason) (sbx.Sandbox, error) {
	return m.run(ctx, id, step{
		verb: "pause", from: []sbx.State{sbx.StateRunning}, intent: sbx.IntentPausing, begin: "pausing", done: "paused",
		call: func(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) (any, error) {
			return nil, p.Pause(ctx, sb.Handle)
		},
		settle: func(sb *sbx.Sandbox, _ any) {
			sb.State, sb.PauseReason, sb.PausedAt, sb.ExpiresAt = sbx.StatePaused, reason, m.clock.Now(), time.Time{}
		},
	})
}

// Hibernate checkpoints a running or paused sandbox to disk and releases its
// processes and memory; it stays paused (for reason, when it was running)
// and Resume wakes it.
func (m *Manager) Hibernate(ctx context.Context, c sbx.Caller, ref string, reason sbx.PauseReason) (sbx.Sandbox, error) {
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sb, err
	}
	if err := m.canHibernate(sb); err != nil {
		return sb, err
	}
	return m.hibernate(ctx, sb.ID, reason)
}

// canHibernate answers a 501 when the sandbox's provider cannot hibernate.
func (m *Manager) canHibernate(sb sbx.Sandbox) error {
	p, err := m.provider(sb.Provider)
	if err != nil {
		return err
	}
	if _, ok := p.(sbx.Hibernator); !ok || !p.Capabilities().Hibernate {
		return sbx.Errorf(sbx.EUnsupported, "provider %s cannot hibernate sandboxes on this host; pause keeps them in memory", p.Name())
	}
	return nil
}

func (m *Manager) hibernate(ctx context.Context, id string, reason sbx.PauseReason) (sbx.Sandbox, error) {
	return m.run(ctx, id, step{
		verb: "hibernate", from: []sbx.State{sbx.StateRunning, sbx.StatePaused}, intent: sbx.IntentHibernating,
		begin: "hibernating", done: "hibernated",
		check: func(sb *sbx.Sandbox) error {
			if sb.Hibernated {
				return sbx.Errorf(sbx.EConflict, "cannot hibernate sandbox %s: it is already hibernated", sb.ProviderSandboxID)
			}
			return nil
		},
		call: func(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) (any, error) {
			return nil, p.(sbx.Hibernator).Hibernate(ctx, sb.Handle)
		},
		settle: func(sb *sbx.Sandbox, _ any) {
			if sb.State == sbx.StateRunning {
				sb.State, sb.PauseReason, sb.PausedAt, sb.ExpiresAt = sbx.StatePaused, reason, m.clock.Now(), time.Time{}
			}
			sb.Hibernated = true
		},
	})
}

// Resume continues a paused sandbox; timeout, when not zero, replaces its timeout.
func (m *Manager) Resume(ctx context.Context, c sbx.Caller, ref string, timeout time.Duration) (sbx.Sandbox, error) {
	if timeout != 0 {
		if err := m.timeoutAllowed(c, "timeout", timeout); err != nil {
			return sbx.Sandbox{}, err
		}
	}
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sb, err
	}
	return m.resume(ctx, sb.ID, timeout)
}

func (m *Manager) resume(ctx context.Context, id string, timeout time.Duration) (sbx.Sandbox, error) {
	return m.run(ctx, id, step{
		verb: "resume", from: []sbx.State{sbx.StatePaused}, intent: sbx.IntentResuming, begin: "resuming", done: "resumed",
		check: func(sb *sbx.Sandbox) error {
			if err := m.checkFunded(ctx, sb.OrgID, "resume sandbox "+sb.ProviderSandboxID); err != nil {
				return err
			}
			return m.admitResume(ctx, *sb)
		},
		call: func(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) (any, error) {
			return p.Resume(ctx, sb.Handle)
		},
		settle: func(sb *sbx.Sandbox, result any) {
			if timeout != 0 {
				sb.Timeout = timeout
			}
			sb.Handle = result.(sbx.Handle)
			sb.State, sb.PauseReason, sb.ExpiresAt, sb.Hibernated = sbx.StateRunning, "", m.clock.Now().Add(sb.Timeout), false
		},
	})
}

// Kill destroys a sandbox's compute; the row stays, killed, for audit and billing.
func (m *Manager) Kill(ctx context.Context, c sbx.Caller, ref string) (sbx.Sandbox, error) {
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sb, err
	}
	return m.kill(ctx, sb.ID, sbx.EndDeleted)
}

func (m *Manager) kill(ctx context.Context, id string, reason sbx.EndReason) (sbx.Sandbox, error) {
	return m.run(ctx, id, step{
		verb: "delete", from: []sbx.State{sbx.StateStarting, sbx.StateRunning, sbx.StatePaused, sbx.StateFailed},
		intent: sbx.IntentKilling, begin: "killing", done: "killed",
		prepare: func(sb *sbx.Sandbox) {
			if sb.State != sbx.StateFailed {
				sb.EndReason = reason
			}
		},
		call: func(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) (any, error) {
			if sb.Handle.IsZero() {
				return nil, nil // nothing was ever created
			}
			return nil, p.Kill(ctx, sb.Handle)
		},
		settle: func(sb *sbx.Sandbox, _ any) {
			now := m.clock.Now()
			if sb.EndedAt.IsZero() {
				sb.EndedAt = now
			}
			sb.State, sb.PauseReason, sb.ExpiresAt = sbx.StateKilled, "", time.Time{}
		},
	})
}

// Connect makes a sandbox usable for the caller: a paused one is resumed, a
// running one has its expiry pushed to at least now+timeout.
func (m *Manager) Connect(ctx context.Context, c sbx.Caller, ref string, timeout time.Duration) (sbx.Sandbox, error) {
	if timeout != 0 {
		if err := m.timeoutAllowed(c, "timeout", timeout); err != nil {
			return sbx.Sandbox{}, err
		}
	}
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sb, err
	}
	if err := m.waitCreate(ctx, sb.ID); err != nil {
		return sb, err
	}
	if sb, err = m.store.GetSandbox(ctx, "", sb.ID); err != nil {
		return sb, err
	}
	if sb.State == sbx.StatePaused {
		return m.resume(ctx, sb.ID, timeout)
	}
	if timeout == 0 {
		timeout = sb.Timeout
	}
	return m.extend(ctx, sb.ID, "connect", "connected", timeout, false)
}

// Refresh keeps a running sandbox alive for at least d more; it never shortens.
func (m *Manager) Refresh(ctx context.Context, c sbx.Caller, ref string, d time.Duration) (sbx.Sandbox, error) {
	if err := planTimeout(c, "duration", d); err != nil {
		return sbx.Sandbox{}, err
	}
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sb, err
	}
	return m.extend(ctx, sb.ID, "refresh", "refreshed", d, false)
}

// SetTimeout makes a sandbox expire timeout from now (running) or from its next
// resume (paused), shorter or longer than before.
func (m *Manager) SetTimeout(ctx context.Context, c sbx.Caller, ref string, timeout time.Duration) (sbx.Sandbox, error) {
	if err := m.timeoutAllowed(c, "timeout", timeout); err != nil {
		return sbx.Sandbox{}, err
	}
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sb, err
	}
	return m.extend(ctx, sb.ID, "set the timeout of", "timeout_set", timeout, true)
}

// extend changes the expiry of a running sandbox (and, with exact, its
// timeout, also when paused) without calling the provider.
func (m *Manager) extend(ctx context.Context, id, verb, stepName string, d time.Duration, exact bool) (sbx.Sandbox, error) {
	from := []sbx.State{sbx.StateRunning}
	if exact {
		from = append(from, sbx.StatePaused)
	}
	sb, err := m.update(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		if err := allowed(sb, verb, from); err != nil {
			return nil, err
		}
		now := m.clock.Now()
		sb.UpdatedAt = now
		if exact {
			sb.Timeout = d
		}
		if sb.State == sbx.StateRunning {
			if at := now.Add(d); exact || at.After(sb.ExpiresAt) {
				sb.ExpiresAt = at
			}
		}
		return []sbx.Event{m.event(stepName, fmt.Sprintf("expires %s", expiryText(sb)))}, nil
	})
	if err == nil {
		m.notifyReaper()
	}
	return sb, err
}

// waitCreate waits for an in-flight create of id to settle.
func (m *Manager) waitCreate(ctx context.Context, id string) error {
	m.mu.Lock()
	done := m.creating[id]
	m.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func expiryText(sb *sbx.Sandbox) string {
	if sb.ExpiresAt.IsZero() {
		return fmt.Sprintf("%ds after resume", int64(sb.Timeout/time.Second))
	}
	return sb.ExpiresAt.Format(time.RFC3339)
}
