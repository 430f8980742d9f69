package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/telemetry"
	"go.opentelemetry.io/otel/attribute"
)

// step is one provider operation on a sandbox: its action, whose cell of
// sbx's transition table says which states allow it, the intent and timeline
// steps and the resulting state; the conditions the table cannot know, the
// call, and how the outcome settles the row's other fields.
type step struct {
	action  sbx.Action
	admit   func(ctx context.Context, sb sbx.Sandbox) error               // optional: conditions beyond the row (below)
	guard   func(sb sbx.Sandbox) error                                    // optional: a condition on the row, checked where the intent is written
	prepare func(sb *sbx.Sandbox)                                         // optional: changes written with the intent
	call    func(context.Context, sbx.Provider, sbx.Sandbox) (any, error) // the provider call
	settle  func(sb *sbx.Sandbox, t sbx.Transition, result any)           // applies a successful outcome: t.To and the rest
	why     string                                                        // optional: what asked for it, in the first step's detail
}

// run applies st to the sandbox with sbx UUID id: lock, check and write the
// intent, call the provider, settle. A provider failure clears the intent,
// records the failure in the timeline and leaves the state as it was.
//
// st.admit asks what lies beyond the row (the org's balance, the provider's
// host) of the row as read under the sandbox's lock, once the table allows
// the action, before the transaction that writes the intent: neither is
// read in that transaction's snapshot anyway, and a provider measuring its
// disk would hold the ledger's one writer (SQLite) while it did. A table's
// refusal is left to the transaction, which answers it first as before.
func (m *Manager) run(ctx context.Context, id string, st step) (_ sbx.Sandbox, err error) {
	start := time.Now()
	ctx, span := telemetry.Span(ctx, "lifecycle."+string(st.action), attribute.String("sbx.sandbox", id))
	defer func() { telemetry.End(span, err) }()
	unlock, err := m.lock(ctx, id)
	if err != nil {
		return sbx.Sandbox{}, err
	}
	defer unlock()
	if st.admit != nil {
		cur, err := m.store.GetSandbox(ctx, "", id)
		if err != nil {
			return cur, err
		}
		if _, err := sbx.Allow(cur, st.action); err == nil {
			if err := st.admit(ctx, cur); err != nil {
				return cur, err
			}
		}
	}
	var t sbx.Transition
	sb, err := m.update(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		var err error
		if t, err = sbx.Allow(*sb, st.action); err != nil {
			return nil, err
		}
		if st.guard != nil {
			if err := st.guard(*sb); err != nil {
				return nil, err
			}
		}
		sb.Intent, sb.OpOwner, sb.UpdatedAt = t.Intent, m.owner, m.clock.Now()
		if st.prepare != nil {
			st.prepare(sb)
		}
		return []sbx.Event{m.event(t.Begin, st.why)}, nil
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
		result, callErr = telemetry.Call(ctx, sb.Provider, string(st.action), func(ctx context.Context) (any, error) { return st.call(ctx, p, sb) })
	}
	sb, err = m.update(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.Intent, sb.UpdatedAt = sbx.IntentNone, m.clock.Now()
		if callErr != nil {
			return []sbx.Event{m.event(t.Failed, providerMessage(callErr))}, nil
		}
		st.settle(sb, t, result)
		return []sbx.Event{m.event(t.Done, "")}, nil
	})
	telemetry.Operation(string(st.action), sb.Provider, errors.Join(callErr, err), time.Since(start))
	if err != nil {
		return sb, err
	}
	if callErr != nil {
		m.log.Warn("provider operation failed", "op", t.Verb, "sandbox", id, "err", callErr)
		return sb, sbx.Errorf(sbx.EProvider, "could not %s sandbox %s: %s", t.Verb, sb.ProviderSandboxID, providerMessage(callErr))
	}
	m.notifyReaper()
	return sb, nil
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
		action: sbx.ActionPause,
		call: func(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) (any, error) {
			return nil, p.Pause(ctx, sb.Handle)
		},
		settle: func(sb *sbx.Sandbox, t sbx.Transition, _ any) {
			sb.State, sb.PauseReason, sb.PausedAt, sb.ExpiresAt = t.To, reason, m.clock.Now(), time.Time{}
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
		action: sbx.ActionHibernate, // the table refuses a sandbox already hibernated
		call: func(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) (any, error) {
			return nil, p.(sbx.Hibernator).Hibernate(ctx, sb.Handle)
		},
		settle: func(sb *sbx.Sandbox, t sbx.Transition, _ any) {
			if t.From != t.To { // it was running: it is paused now, for reason
				sb.State, sb.PauseReason, sb.PausedAt, sb.ExpiresAt = t.To, reason, m.clock.Now(), time.Time{}
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
	return m.resume(ctx, sb.ID, timeout, "")
}

func (m *Manager) resume(ctx context.Context, id string, timeout time.Duration, why string) (sbx.Sandbox, error) {
	return m.run(ctx, id, step{
		action: sbx.ActionResume,
		why:    why,
		admit: func(ctx context.Context, sb sbx.Sandbox) error {
			if err := m.checkFunded(ctx, sb.OrgID, "resume sandbox "+sb.ProviderSandboxID); err != nil {
				return err
			}
			return m.admitResume(ctx, sb)
		},
		call: func(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) (any, error) {
			if err := applyEgress(ctx, p, sb); err != nil {
				return nil, err
			}
			if r, ok := p.(sbx.TokenResumer); ok {
				return r.ResumeWithToken(ctx, sb.Handle, sb.AccessToken)
			}
			return p.Resume(ctx, sb.Handle)
		},
		settle: func(sb *sbx.Sandbox, t sbx.Transition, result any) {
			if timeout != 0 {
				sb.Timeout = timeout
			}
			sb.Handle = result.(sbx.Handle)
			sb.State, sb.PauseReason, sb.ExpiresAt, sb.Hibernated = t.To, "", m.clock.Now().Add(sb.Timeout), false
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
	return m.killIf(ctx, id, reason, nil)
}

// killIf is kill of a sandbox whose row guard accepts, where the kill's
// intent is written.
func (m *Manager) killIf(ctx context.Context, id string, reason sbx.EndReason, guard func(sbx.Sandbox) error) (sbx.Sandbox, error) {
	return m.run(ctx, id, step{
		action: sbx.ActionDelete,
		guard:  guard,
		prepare: func(sb *sbx.Sandbox) {
			if sb.State != sbx.StateFailed { // a failed sandbox keeps why it failed
				sb.EndReason = reason
			}
		},
		call: func(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) (any, error) {
			if sb.Handle.IsZero() {
				return nil, nil // nothing was ever created
			}
			return nil, p.Kill(ctx, sb.Handle)
		},
		settle: func(sb *sbx.Sandbox, t sbx.Transition, _ any) {
			now := m.clock.Now()
			if sb.EndedAt.IsZero() {
				sb.EndedAt = now
			}
			sb.State, sb.PauseReason, sb.ExpiresAt = t.To, "", time.Time{}
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
	if t, ok := sbx.Lookup(sb.State, sbx.ActionConnect); ok && t.Via == sbx.ActionResume {
		return m.resume(ctx, sb.ID, timeout, "")
	}
	if timeout == 0 {
		timeout = sb.Timeout
	}
	return m.extend(ctx, sb.ID, sbx.ActionConnect, timeout, false)
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
	return m.extend(ctx, sb.ID, sbx.ActionRefresh, d, false)
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
	return m.extend(ctx, sb.ID, sbx.ActionSetTimeout, timeout, true)
}

// extend changes the expiry of a running sandbox (and, with exact, its
// timeout, also when paused: the table allows a paused sandbox only
// sbx.ActionSetTimeout) without calling the provider.
func (m *Manager) extend(ctx context.Context, id string, a sbx.Action, d time.Duration, exact bool) (sbx.Sandbox, error) {
	sb, err := m.update(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		t, err := sbx.Allow(*sb, a)
		if err != nil {
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
		return []sbx.Event{m.event(t.Done, fmt.Sprintf("expires %s", expiryText(sb)))}, nil
	})
	if err == nil {
		m.notifyReaper()
	}
	return sb, err
}

// waitCreate waits for an in-flight create of id to settle.
func (m *Manager) waitCreate(ctx context.Context, id string) error {
	return m.await(ctx, m.creating, id)
}

// await waits until the work on id that pending (m.creating, m.handing)
// holds, if any, is done: its channel closed. m.mu guards pending.
func (m *Manager) await(ctx context.Context, pending map[string]chan struct{}, id string) error {
	m.mu.Lock()
	done := pending[id]
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
