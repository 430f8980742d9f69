package network

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"text/template"

	"github.com/sbxdev/sbx"
)

// The nftables table is a function of the config and the attachments: a
// start or a detach renders it whole and replaces it in one transaction
// (`nft -f`), so the rules always match the records and are never briefly
// absent; an attach only adds its set elements, and a change of a
// sandbox's policy (or of the addresses its names resolve to) swaps its
// elements, in one transaction too.
//
// A sandbox's policy is checked for every packet it sends in a
// connection's original direction, not only for the first: a change takes
// effect at once, and a connection the new policy does not allow stops
// passing. Conntrack entries, and so the connections a policy still allows
// and their NAT, survive every change.

// blocked are the destinations no sandbox reaches, whatever its policy;
// so is the pool, by a rule of its own (it may overlap these).
var blocked = sbx.EgressUnreachable()

var rulesetTemplate = template.Must(template.New("ruleset").Funcs(template.FuncMap{
	"elements": func(xs []string) string {
		if len(xs) == 0 {
			return ""
		}
		return "elements = { " + strings.Join(xs, ", ") + " }"
	},
}).Parse(`table inet {{.Table}} {}
delete table inet {{.Table}}
table inet {{.Table}} {
	set sandboxes { type ifname; {{elements .Sets.sandboxes}} }
	set deny_all { type ifname; {{elements .Sets.deny_all}} }
	set dns { type ifname; {{elements .Sets.dns}} }
	set allow { type ifname . ipv4_addr; flags interval; {{elements .Sets.allow}} }
	set deny { type ifname . ipv4_addr; flags interval; {{elements .Sets.deny}} }
	set nameservers { type ipv4_addr; {{elements .Nameservers}} }
	set blocked { type ipv4_addr; flags interval; {{elements .Blocked}} }

	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname @sandboxes jump egress
		# Into a sandbox only replies pass: nothing opens a connection to it through the host.
		oifname @sandboxes ct state established,related accept
		oifname @sandboxes drop
	}

	# What a sandbox may send through the host: every packet of the
	# connections it opens is checked against its policy as it is now.
	chain egress {
		meta nfproto ipv6 drop
		ct direction reply accept
		ct state related accept
		iifname . ip daddr @deny drop
		iifname @dns ip daddr @nameservers meta l4proto { tcp, udp } th dport 53 accept
		ip daddr {{.Pool}} drop # other sandboxes, and unused pool addresses
		ip daddr @blocked drop
		iifname . ip daddr @allow accept
		iifname @deny_all drop
	}

	# To the host itself a sandbox only replies: the host connects into a sandbox, not the other way.
	chain input {
		type filter hook input priority filter; policy accept;
		iifname @sandboxes ct state established,related accept
		iifname @sandboxes drop
	}

	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ip saddr {{.Pool}} oifname != @sandboxes masquerade
	}
}
`))

// sets are the per-sandbox sets of the table, in the order a change
// writes them.
var sets = []string{"sandboxes", "deny_all", "dns", "allow", "deny"}

// ruleset renders the table for the config and the attachments.
func ruleset(cfg Config, attached map[string]Attachment) string {
	data := struct {
		Table                string
		Pool                 netip.Prefix
		Sets                 map[string][]string
		Nameservers, Blocked []string
	}{Table: cfg.Table, Pool: cfg.Pool, Sets: map[string][]string{}}
	for _, b := range blocked {
		data.Blocked = append(data.Blocked, b.String())
	}
	for _, ns := range cfg.Nameservers {
		data.Nameservers = append(data.Nameservers, ns.String())
	}
	for _, id := range slices.Sorted(maps.Keys(attached)) {
		for set, xs := range elements(attached[id]) {
			data.Sets[set] = append(data.Sets[set], xs...)
		}
	}
	var b strings.Builder
	if err := rulesetTemplate.Execute(&b, data); err != nil {
		panic(err) // the template and its data are ours
	}
	return b.String()
}

// elements are an attachment's entries in the table's sets, by set: its
// host interface in sandboxes, deny_all (modes none and allow) and dns
// (when it reaches the nameservers), its interface with each prefix it
// reaches in allow and each it never reaches in deny.
func elements(a Attachment) map[string][]string {
	iface := `"` + a.HostIf + `"`
	out := map[string][]string{"sandboxes": {iface}}
	if a.Policy.DenyAll {
		out["deny_all"] = []string{iface}
	}
	if a.Policy.dns() {
		out["dns"] = []string{iface}
	}
	for _, p := range a.allowed() {
		out["allow"] = append(out["allow"], iface+" . "+p.String())
	}
	for _, p := range a.denied() {
		out["deny"] = append(out["deny"], iface+" . "+p.String())
	}
	return out
}

// syncRules replaces the table with the one for m's attachments.
func (m *Manager) syncRules(ctx context.Context) error {
	return m.nft(ctx, ruleset(m.cfg, m.attached))
}

// addRules adds one attachment's set elements to the installed table, in
// one transaction: far cheaper than replacing the table, which is what
// makes attaching fast. Should it fail (the table was changed behind sbx's
// back), the table is replaced whole.
func (m *Manager) addRules(ctx context.Context, a Attachment) error {
	if err := m.nft(ctx, m.change(nil, elements(a))); err != nil {
		return m.syncRules(ctx)
	}
	return nil
}

// change is the script that turns a sandbox's set elements from old into
// new: the ones that go deleted, then the ones that come added, all in
// one transaction. It is empty when they are the same.
func (m *Manager) change(old, new map[string][]string) string {
	var b strings.Builder
	for _, verb := range []string{"delete", "add"} {
		for _, set := range sets {
			from, to := old[set], new[set]
			if verb == "add" {
				from, to = to, from
			}
			var xs []string
			for _, x := range from {
				if !slices.Contains(to, x) {
					xs = append(xs, x)
				}
			}
			if len(xs) > 0 {
				fmt.Fprintf(&b, "%s element inet %s %s { %s }\n", verb, m.cfg.Table, set, strings.Join(xs, ", "))
			}
		}
	}
	return b.String()
}

// nft runs an nft script as one transaction.
func (m *Manager) nft(ctx context.Context, script string) error {
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return errors.New("network: nft not found: install nftables")
		}
		return fmt.Errorf("network: nftables table %s: %w: %s", m.cfg.Table, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// resolvConfNameservers returns the IPv4 nameservers listed in a
// resolv.conf file; a missing file lists none.
func resolvConfNameservers(file string) ([]netip.Addr, error) {
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("network: nameservers: %w", err)
	}
	defer f.Close()
	var servers []netip.Addr
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if len(fields) < 2 || fields[0] != "nameserver" {
			continue
		}
		if addr, err := netip.ParseAddr(fields[1]); err == nil && addr.Unmap().Is4() {
			servers = append(servers, addr.Unmap())
		}
	}
	if err := lines.Err(); err != nil {
		return nil, fmt.Errorf("network: nameservers: %s: %w", file, err)
	}
	return servers, nil
}
