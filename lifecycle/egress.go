package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sbxdev/sbx"
)

// A sandbox's egress policy (sbx.Egress): what a create asks (else its
// runtime's configuration, else its template's default, else the server's
// default) bounded by the modes the server's operator allows, recorded in
// the ledger with the sandbox, enforced by its provider (an
// sbx.EgressSetter) from the create on, changed at once by SetEgress, and
// applied again from the ledger before every resume, so that the ledger's
// policy is the one a sandbox wakes with.

// EgressConfig is the server operator's word on egress.
type EgressConfig struct {
	// Default is the policy of a sandbox whose create, runtime and
	// template name none (serve --deny-egress: none); the zero value is
	// the internet.
	Default sbx.Egress
	// Modes are the modes a sandbox's policy may have, whoever names it
	// (serve --egress-modes); nil: every mode.
	Modes []sbx.EgressMode
}

// allows reports whether the operator lets a sandbox have mode.
func (c EgressConfig) allows(mode sbx.EgressMode) bool {
	return c.Modes == nil || slices.Contains(c.Modes, mode)
}

// checkEgressMode answers a 403 when the operator does not let a sandbox
// have e's mode; from says who named the policy.
func (m *Manager) checkEgressMode(e sbx.Egress, from string) error {
	if m.cfg.Egress.allows(e.Mode) {
		return nil
	}
	modes := make([]string, len(m.cfg.Egress.Modes))
	for i, mode := range m.cfg.Egress.Modes {
		modes[i] = string(mode)
	}
	return sbx.Errorf(sbx.EForbidden, "egress mode %s (%s) is not allowed on this server: its operator allows only %s (serve --egress-modes)",
		e.Mode, from, strings.Join(modes, ", "))
}

// createEgress decides a new sandbox's policy on provider p: the
// request's, else its template's default, else the server's, in a mode
// the operator allows. A provider that enforces none (not an
// sbx.EgressSetter) gets only the plain internet, recorded as no policy.
func (m *Manager) createEgress(p sbx.Provider, req CreateRequest, defaults sbx.TemplateDefaults) (*sbx.Egress, error) {
	e, from := req.Egress, "asked for"
	if e == nil && defaults.Egress != nil {
		var problems sbx.Problems
		checked := sbx.CheckEgress(&problems, "egress", *defaults.Egress)
		if err := problems.Err(); err != nil {
			return nil, sbx.Errorf(sbx.EUnavailable, "template %s's default egress policy is not valid (%s); ask the operator of this sbx to build it again", req.TemplateID, sbx.ErrorMessage(err))
		}
		e, from = &checked, "template "+req.TemplateID+"'s default"
	}
	if e == nil {
		def := m.cfg.Egress.Default
		if def.Mode == "" {
			def.Mode = sbx.EgressInternet
		}
		e, from = &def, "the server's default"
	}
	if err := m.checkEgressMode(*e, from); err != nil {
		return nil, err
	}
	if _, ok := p.(sbx.EgressSetter); !ok {
		if e.IsInternet() {
			return nil, nil
		}
		return nil, sbx.Errorf(sbx.EUnsupported, "provider %s does not enforce egress policies: its sandboxes can only have the internet (egress %s is %s)", p.Name(), e, from)
	}
	return e, nil
}

// SetEgress replaces a running or paused sandbox's egress policy, at once:
// the provider swaps it (connections it no longer allows end too), then
// the ledger records it with an egress_set step. Field names in the
// problems are e's own (mode, allow[2]): the body is the policy.
func (m *Manager) SetEgress(ctx context.Context, c sbx.Caller, ref string, e sbx.Egress) (sbx.Sandbox, error) {
	var problems sbx.Problems
	e = sbx.CheckEgress(&problems, "", e)
	if err := problems.Err(); err != nil {
		return sbx.Sandbox{}, err
	}
	if err := m.checkEgressMode(e, "asked for"); err != nil {
		return sbx.Sandbox{}, err
	}
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sb, err
	}
	p, err := m.provider(sb.Provider)
	if err != nil {
		return sb, err
	}
	setter, ok := p.(sbx.EgressSetter)
	if !ok {
		return sb, sbx.Errorf(sbx.EUnsupported, "provider %s does not enforce egress policies", p.Name())
	}
	unlock, err := m.lock(ctx, sb.ID)
	if err != nil {
		return sb, err
	}
	defer unlock()
	// From here on the caller hanging up must not leave the provider's
	// policy and the ledger's apart.
	ctx = context.WithoutCancel(ctx)
	cur, err := m.store.GetSandbox(ctx, "", sb.ID)
	if err != nil {
		return cur, err
	}
	if _, err := sbx.Allow(cur, sbx.ActionSetEgress); err != nil {
		return cur, err
	}
	if err := setter.SetEgress(ctx, cur.Handle, e); err != nil {
		m.log.Warn("provider operation failed", "op", "set egress", "sandbox", sb.ID, "err", err)
		return cur, sbx.Errorf(sbx.EProvider, "could not set the egress policy of sandbox %s: %s", cur.ProviderSandboxID, providerMessage(err))
	}
	sb, err = m.update(ctx, sb.ID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		t, err := sbx.Allow(*sb, sbx.ActionSetEgress)
		if err != nil {
			return nil, err
		}
		sb.Egress, sb.UpdatedAt = &e, m.clock.Now()
		return []sbx.Event{m.event(t.Done, e.String())}, nil
	})
	if err != nil && cur.Egress != nil { // the ledger keeps the old policy: so does the provider
		if undo := setter.SetEgress(ctx, cur.Handle, *cur.Egress); undo != nil {
			m.log.Error("restoring a sandbox's egress policy after the ledger refused the new one; its next resume applies the ledger's", "sandbox", sb.ID, "err", undo)
		}
	}
	return sb, err
}

// applyEgress gives the provider the ledger's policy of sb again (before a
// resume): what the provider holds changes nothing when it is the same.
func applyEgress(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) error {
	setter, ok := p.(sbx.EgressSetter)
	if !ok || sb.Egress == nil {
		return nil
	}
	if err := setter.SetEgress(ctx, sb.Handle, *sb.Egress); err != nil {
		return fmt.Errorf("applying its egress policy (%s): %w", sb.Egress, err)
	}
	return nil
}
