package network

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A policy's domain names are resolved on the host, by the host's
// resolvers, into addresses that go in the sandbox's sets like the
// policy's own prefixes: at attach and at a change of policy, and then
// again every ResolveEvery (KeepCurrent), so that a name that moves is
// followed. An address a name stops resolving to stays for ResolveLinger
// after the last lookup that gave it, since the sandbox (which resolves
// the name itself, through the same nameservers) may hold it in a cache;
// a failed lookup changes nothing, so that a resolver's outage neither
// opens a denied name's addresses nor closes an allowed one's. A name that
// does not exist resolves to nothing.

// Resolver looks up a host's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// askNameservers is the host's resolver (Go's, reading /etc/hosts first)
// asking servers, one after another, instead of /etc/resolv.conf's.
func askNameservers(servers []netip.Addr) Resolver {
	var next atomic.Uint32
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		server := servers[int(next.Add(1)-1)%len(servers)]
		var d net.Dialer
		return d.DialContext(ctx, network, netip.AddrPortFrom(server, 53).String())
	}}
}

const (
	lookupTimeout   = 5 * time.Second // one lookup
	maxAddrsPerName = 64              // what a name may put in a sandbox's sets
	maxLookups      = 8               // lookups at a time
)

// lookup resolves names to their IPv4 addresses, several at a time: the
// answer has an entry for each lookup that succeeded (a name that does not
// exist: an empty one); a failed lookup has none, and is logged.
func (m *Manager) lookup(ctx context.Context, names []string) map[string][]netip.Addr {
	out := make(map[string][]netip.Addr, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxLookups)
	for _, name := range names {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
			defer cancel()
			addrs, err := m.cfg.Resolver.LookupNetIP(ctx, "ip4", name)
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
				addrs, err = nil, nil
			}
			if err != nil {
				m.cfg.Log.Warn("egress policy: looking a name up failed; its addresses stay as they were", "name", name, "err", err)
				return
			}
			var v4 []netip.Addr
			for _, a := range addrs {
				if a = a.Unmap(); a.Is4() && !slices.Contains(v4, a) && len(v4) < maxAddrsPerName {
					v4 = append(v4, a)
				}
			}
			mu.Lock()
			out[name] = v4
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// merge is what p's names resolve to after fresh lookups, given what they
// resolved to before: a name looked up has its addresses seen now, and
// loses those not seen for ResolveLinger; a name whose lookup failed keeps
// what it had; a name p no longer has goes.
func (m *Manager) merge(p Policy, old map[string][]Resolved, fresh map[string][]netip.Addr) map[string][]Resolved {
	now := time.Now().UTC()
	var out map[string][]Resolved
	for _, name := range p.names() {
		rs := slices.Clone(old[name])
		if addrs, ok := fresh[name]; ok {
			for _, a := range addrs {
				if i := slices.IndexFunc(rs, func(r Resolved) bool { return r.Addr == a }); i >= 0 {
					rs[i].Seen = now
				} else {
					rs = append(rs, Resolved{Addr: a, Seen: now})
				}
			}
			rs = slices.DeleteFunc(rs, func(r Resolved) bool { return now.Sub(r.Seen) > m.cfg.ResolveLinger })
		}
		if len(rs) == 0 {
			continue
		}
		slices.SortFunc(rs, func(a, b Resolved) int { return a.Addr.Compare(b.Addr) })
		if out == nil {
			out = map[string][]Resolved{}
		}
		out[name] = rs
	}
	return out
}

// KeepCurrent looks the names of every attached sandbox's policy up every
// ResolveEvery, until ctx ends, and updates the sets of those whose
// addresses changed.
func (m *Manager) KeepCurrent(ctx context.Context) {
	t := time.NewTicker(m.cfg.ResolveEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			m.Refresh(ctx)
		}
	}
}

// Refresh looks the names of every attached sandbox's policy up once and
// updates the sets (and records) of those whose addresses changed; it
// answers the errors of those updates.
func (m *Manager) Refresh(ctx context.Context) error {
	m.mu.Lock()
	var names []string
	for _, a := range m.attached {
		for _, n := range a.Policy.names() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	m.mu.Unlock()
	if len(names) == 0 {
		return nil
	}
	fresh := m.lookup(ctx, names)
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for id, a := range m.attached {
		if len(a.Policy.names()) == 0 {
			continue
		}
		b := a
		b.Resolved = m.merge(a.Policy, a.Resolved, fresh)
		if sameAddrs(a.Resolved, b.Resolved) {
			m.attached[id] = b // seen anew; the record need not change for that
			continue
		}
		if err := m.replace(ctx, a, b); err != nil {
			m.cfg.Log.Error("egress policy: updating a sandbox's addresses", "sandbox", id, "err", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sameAddrs reports whether two resolutions hold the same addresses.
func sameAddrs(a, b map[string][]Resolved) bool {
	if len(a) != len(b) {
		return false
	}
	for name, ra := range a {
		if !slices.EqualFunc(ra, b[name], func(x, y Resolved) bool { return x.Addr == y.Addr }) {
			return false
		}
	}
	return true
}
