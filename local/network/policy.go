package network

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/sbxdev/sbx"
)

// Policy is a sandbox's egress policy as the table enforces it (PolicyOf
// makes one of an sbx.Egress). Whatever it says, a sandbox never reaches
// the host, another sandbox, the pool, or the ranges of
// sbx.EgressUnreachable: a policy narrows the internet, it never widens it.
type Policy struct {
	// DenyAll reaches nothing but Allow and AllowNames (modes none and
	// allow); without it, the sandbox reaches the internet.
	DenyAll bool
	// Allow are the destinations a DenyAll sandbox reaches.
	Allow []netip.Prefix `json:",omitempty"`
	// AllowNames are domains whose addresses, as the host's resolvers
	// give them (Attachment.Resolved), a DenyAll sandbox reaches.
	AllowNames []string `json:",omitempty"`
	// Deny and DenyNames are never reached, whatever else says.
	Deny      []netip.Prefix `json:",omitempty"`
	DenyNames []string       `json:",omitempty"`
	// DNS keeps the nameservers reachable on port 53 by a DenyAll sandbox
	// (one whose allow-list names a domain, so that it finds its
	// addresses); a sandbox without DenyAll reaches them anyway.
	DNS bool `json:",omitempty"`
}

// PolicyOf is the policy that enforces e, whose entries CheckEgress
// checked (others are left out); the zero Egress is the internet.
func PolicyOf(e sbx.Egress) Policy {
	var p Policy
	p.DenyAll = e.Mode == sbx.EgressNone || e.Mode == sbx.EgressAllow
	for _, x := range sbx.EgressEntries(e.Allow) {
		if x.Prefix.IsValid() {
			p.Allow = append(p.Allow, x.Prefix)
		} else {
			p.AllowNames = append(p.AllowNames, x.Domain)
		}
	}
	if !p.DenyAll { // only an allow-list allows: the internet needs none
		p.Allow, p.AllowNames = nil, nil
	}
	for _, x := range sbx.EgressEntries(e.Deny) {
		if x.Prefix.IsValid() {
			p.Deny = append(p.Deny, x.Prefix)
		} else {
			p.DenyNames = append(p.DenyNames, x.Domain)
		}
	}
	p.DNS = e.Mode == sbx.EgressAllow && len(p.AllowNames) > 0
	return p
}

// names are the domains p resolves, without repeats.
func (p Policy) names() []string {
	var out []string
	for _, n := range slices.Concat(p.AllowNames, p.DenyNames) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// dns reports whether a sandbox under p reaches the nameservers.
func (p Policy) dns() bool { return !p.DenyAll || p.DNS }

// check checks that p's prefixes are IPv4 and its names domains.
func (p Policy) check() error {
	for _, q := range slices.Concat(p.Allow, p.Deny) {
		if !q.Addr().Is4() {
			return fmt.Errorf("network: policy entry %s: want an IPv4 prefix", q)
		}
	}
	for _, n := range p.names() {
		if e, problem := sbx.ParseEgressEntry(n); problem != "" || e.Domain != n {
			return fmt.Errorf("network: policy name %q: want a domain name, lower case", n)
		}
	}
	return nil
}

// Resolved is an address a domain of a policy resolved to, and when a
// lookup last gave it.
type Resolved struct {
	Addr netip.Addr
	Seen time.Time
}

// allowed and denied are the prefixes of a's policy with the addresses its
// names resolved to, as the table's sets hold them.
func (a Attachment) allowed() []netip.Prefix {
	if !a.Policy.DenyAll {
		return nil
	}
	return normalize(slices.Concat(a.Policy.Allow, a.addrsOf(a.Policy.AllowNames)))
}

func (a Attachment) denied() []netip.Prefix {
	return normalize(slices.Concat(a.Policy.Deny, a.addrsOf(a.Policy.DenyNames)))
}

func (a Attachment) addrsOf(names []string) []netip.Prefix {
	var out []netip.Prefix
	for _, n := range names {
		for _, r := range a.Resolved[n] {
			out = append(out, netip.PrefixFrom(r.Addr, 32))
		}
	}
	return out
}

// normalize returns prefixes masked and sorted, without those another one
// covers: nftables rejects overlapping elements.
func normalize(prefixes []netip.Prefix) []netip.Prefix {
	widestFirst := make([]netip.Prefix, 0, len(prefixes))
	for _, p := range prefixes {
		widestFirst = append(widestFirst, p.Masked())
	}
	slices.SortFunc(widestFirst, func(a, b netip.Prefix) int { return a.Bits() - b.Bits() })
	var out []netip.Prefix
	for _, p := range widestFirst {
		if !slices.ContainsFunc(out, p.Overlaps) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return out
}
