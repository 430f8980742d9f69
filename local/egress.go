package local

import (
	"context"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/local/network"
)

// A sandbox's egress policy is its network attachment's (local/network):
// Create attaches it with Spec.Egress, SetEgress swaps it in the table at
// once, and the attachment, with its policy and what the policy's names
// resolved to, is recorded beside the sandbox's other network state, so
// that it holds across pause, hibernation (the network stays) and restarts.

// SetEgress implements sbx.EgressSetter: the sandbox's policy is replaced
// at once, whether it runs, is paused or is hibernated; connections the
// new policy does not allow stop passing. A host that runs sandboxes
// without a network (Config.Network nil) has nothing to enforce: they
// reach nothing.
func (p *Provider) SetEgress(ctx context.Context, h sbx.Handle, e sbx.Egress) (err error) {
	defer func() { err = p.hide(err) }()
	m, end, err := p.load(ctx, h, stateRunning, statePaused, stateHibernated)
	if err != nil {
		return err
	}
	defer end()
	if p.cfg.Network == nil {
		return nil
	}
	if err := p.cfg.Network.SetPolicy(ctx, m.ProviderID, network.PolicyOf(e)); err != nil {
		return err
	}
	p.appendNote(m.ProviderID, "egress policy: %s", e)
	return nil
}

// TemplateDefaults implements sbx.TemplateDefaulter: the default policy
// and the ports a template's current version names (template build
// --egress…, --port).
func (p *Provider) TemplateDefaults(ctx context.Context, name, version string) (sbx.TemplateDefaults, error) {
	t, err := p.cfg.Templates.At(name, version)
	if err != nil {
		return sbx.TemplateDefaults{}, p.noTemplate(name, err)
	}
	return sbx.TemplateDefaults{Egress: t.Egress, Ports: t.Ports, Version: t.Version}, nil
}
