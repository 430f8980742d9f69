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
)

// The nftables table is a function of the config and the attachments: a
// start or a detach renders it whole and replaces it in one transaction
// (`nft -f`), so the rules always match the records and are never briefly
// absent; an attach only adds its set elements.
// Conntrack entries, and so established connections and their NAT, survive.

// blocked are the destinations a sandbox may not reach unless its policy
// allows them; so is the pool, by a rule of its own (it may overlap these).
var blocked = []string{
	"0.0.0.0/8",      // "this" network
	"10.0.0.0/8",     // private
	"100.64.0.0/10",  // carrier-grade NAT
	"127.0.0.0/8",    // loopback
	"169.254.0.0/16", // link-local, cloud metadata (169.254.169.254) included
	"172.16.0.0/12",  // private
	"192.168.0.0/16", // private
	"224.0.0.0/4",    // multicast
	"240.0.0.0/4",    // reserved, broadcast included
}

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
	set sandboxes { type ifname; {{elements .Sandboxes}} }
	set deny_all { type ifname; {{elements .DenyAll}} }
	set allow { type ifname . ipv4_addr; flags interval; {{elements .Allow}} }
	set nameservers { type ipv4_addr; {{elements .Nameservers}} }
	set blocked { type ipv4_addr; flags interval; {{elements .Blocked}} }

	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname @sandboxes jump egress
		# Into a sandbox only replies pass: nothing opens a connection to it through the host.
		oifname @sandboxes ct state established,related accept
		oifname @sandboxes drop
	}

	# What a sandbox may send through the host.
	chain egress {
		meta nfproto ipv6 drop
		ct state established,related accept
		iifname . ip daddr @allow accept
		iifname @deny_all drop
		ip daddr @nameservers meta l4proto { tcp, udp } th dport 53 accept
		ip daddr {{.Pool}} drop # other sandboxes, and unused pool addresses
		ip daddr @blocked drop
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

// ruleset renders the table for the config and the attachments.
func ruleset(cfg Config, attached map[string]Attachment) string {
	data := struct {
		Table                                           string
		Pool                                            netip.Prefix
		Sandboxes, DenyAll, Allow, Nameservers, Blocked []string
	}{Table: cfg.Table, Pool: cfg.Pool, Blocked: blocked}
	for _, ns := range cfg.Nameservers {
		data.Nameservers = append(data.Nameservers, ns.String())
	}
	for _, id := range slices.Sorted(maps.Keys(attached)) {
		iface, denyAll, allow := elements(attached[id])
		data.Sandboxes = append(data.Sandboxes, iface)
		if denyAll {
			data.DenyAll = append(data.DenyAll, iface)
		}
		data.Allow = append(data.Allow, allow...)
	}
	var b strings.Builder
	if err := rulesetTemplate.Execute(&b, data); err != nil {
		panic(err) // the template and its data are ours
	}
	return b.String()
}

// elements are an attachment's entries in the table's sets: its host
// interface, whether it is in deny_all, and its allow entries.
func elements(a Attachment) (iface string, denyAll bool, allow []string) {
	iface = `"` + a.HostIf + `"`
	for _, p := range a.Policy.Allow {
		allow = append(allow, iface+" . "+p.String())
	}
	return iface, a.Policy.DenyAll, allow
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
	iface, denyAll, allow := elements(a)
	var b strings.Builder
	fmt.Fprintf(&b, "add element inet %s sandboxes { %s }\n", m.cfg.Table, iface)
	if denyAll {
		fmt.Fprintf(&b, "add element inet %s deny_all { %s }\n", m.cfg.Table, iface)
	}
	if len(allow) > 0 {
		fmt.Fprintf(&b, "add element inet %s allow { %s }\n", m.cfg.Table, strings.Join(allow, ", "))
	}
	if err := m.nft(ctx, b.String()); err != nil {
		return m.syncRules(ctx)
	}
	return nil
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
