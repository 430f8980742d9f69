package network

import (
	"fmt"
	"net/netip"
	"slices"
)

// Policy is a sandbox's egress policy. By default a sandbox reaches the
// internet and the configured nameservers but not private, link-local,
// loopback or reserved addresses, other sandboxes or the host.
type Policy struct {
	DenyAll bool           // no egress at all (except Allow)
	Allow   []netip.Prefix // IPv4 destinations allowed even when otherwise denied (private ranges included)
}

// normalizeAllow checks that every prefix is IPv4 and returns them masked
// and sorted, without those another one covers: nftables rejects
// overlapping elements.
func normalizeAllow(allow []netip.Prefix) ([]netip.Prefix, error) {
	widestFirst := make([]netip.Prefix, 0, len(allow))
	for _, p := range allow {
		if !p.Addr().Is4() {
			return nil, fmt.Errorf("network: allow %s: want an IPv4 prefix", p)
		}
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
	return out, nil
}
