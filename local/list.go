package local

import (
	"context"
	"os"
	"sort"
	"strings"

	"github.com/sbxdev/sbx"
)

// List implements sbx.Provider: every sandbox this host holds something of —
// a runsc container, a directory, a network attachment or a cgroup — so that
// reconciliation adopts what the ledger owns and removes the rest. Compute
// sbx cannot tell the owner of is listed without a sandbox UUID.
func (p *Provider) List(ctx context.Context) ([]sbx.Instance, error) {
	containers, err := p.rs.List(ctx)
	if err != nil {
		return nil, err
	}
	status := map[string]sbx.InstanceStatus{}
	for _, c := range containers {
		switch {
		case c.Status == "paused":
			status[c.ID] = sbx.InstancePaused
		case (c.Status == "running" || c.Status == "created") && p.alive(c.ID):
			status[c.ID] = sbx.InstanceRunning
		default: // runsc's list does not notice a sandbox that died
			status[c.ID] = sbx.InstanceDead
		}
	}
	ids, err := p.sandboxIDs()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if _, ok := status[id]; !ok {
			status[id] = sbx.InstanceDead
		}
	}
	if p.cfg.Network != nil {
		attached, err := p.cfg.Network.List()
		if err != nil {
			return nil, err
		}
		for _, a := range attached {
			if _, ok := status[a.ID]; !ok {
				status[a.ID] = sbx.InstanceDead
			}
		}
	}
	for _, id := range p.cgroupIDs() {
		if _, ok := status[id]; !ok {
			status[id] = sbx.InstanceDead
		}
	}

	var out []sbx.Instance
	for id, st := range status {
		p.idle(id, func() { // else being created or changed: its operation settles it
			m, err := p.readMeta(id)
			if err != nil {
				m = meta{ProviderID: id} // no record: unowned, so reconciliation removes it
			}
			if st == sbx.InstanceDead && m.State == stateHibernated {
				st = sbx.InstanceHibernated
			}
			out = append(out, instance(m, st))
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProviderSandboxID < out[j].ProviderSandboxID })
	return out, nil
}

// sandboxIDs lists the sandbox directories.
func (p *Provider) sandboxIDs() ([]string, error) {
	entries, err := os.ReadDir(p.sandboxesDir())
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && idPattern.MatchString(e.Name()) && !strings.HasSuffix(e.Name(), ".tmp") {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}
