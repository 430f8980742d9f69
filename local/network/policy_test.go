package network

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
)

func TestPolicyOf(t *testing.T) {
	p := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, x := range s {
			out = append(out, netip.MustParsePrefix(x))
		}
		return out
	}
	for _, c := range []struct {
		e    sbx.Egress
		want Policy
	}{
		{sbx.Egress{}, Policy{}},
		{sbx.Egress{Mode: sbx.EgressInternet, Deny: []string{"203.0.113.0/24", "bad.example"}},
			Policy{Deny: p("203.0.113.0/24"), DenyNames: []string{"bad.example"}}},
		{sbx.Egress{Mode: sbx.EgressNone}, Policy{DenyAll: true}},
		{sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"198.51.100.7/32"}}, Policy{DenyAll: true, Allow: p("198.51.100.7/32")}},
		{sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"198.51.100.7/32", "example.com"}, Deny: []string{"198.51.100.8/32"}},
			Policy{DenyAll: true, Allow: p("198.51.100.7/32"), AllowNames: []string{"example.com"}, Deny: p("198.51.100.8/32"), DNS: true}},
		{sbx.Egress{Mode: sbx.EgressInternet, Allow: []string{"198.51.100.7/32"}}, Policy{}}, // refused by CheckEgress; never widens
	} {
		if got := PolicyOf(c.e); !reflect.DeepEqual(got, c.want) {
			t.Errorf("PolicyOf(%+v) = %+v; want %+v", c.e, got, c.want)
		}
	}
}

// The table's per-sandbox elements, and the script that swaps one
// sandbox's for another policy's: only what differs, deletes first.
func TestElementsAndTheirChange(t *testing.T) {
	m := &Manager{cfg: Config{Table: "sbxt"}}
	seen := time.Now()
	a := Attachment{HostIf: "sbxabc", Policy: Policy{Deny: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}}}
	b := Attachment{HostIf: "sbxabc", Policy: Policy{DenyAll: true, AllowNames: []string{"example.com"}, DNS: true,
		Allow: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}, Deny: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}},
		Resolved: map[string][]Resolved{"example.com": {{Addr: netip.MustParseAddr("198.51.100.9"), Seen: seen}, {Addr: netip.MustParseAddr("192.0.2.1"), Seen: seen}}}}
	if got, want := elements(a), map[string][]string{"sandboxes": {`"sbxabc"`}, "dns": {`"sbxabc"`}, "deny": {`"sbxabc" . 203.0.113.0/24`}}; !reflect.DeepEqual(got, want) {
		t.Errorf("internet less a prefix: %v; want %v", got, want)
	}
	want := map[string][]string{"sandboxes": {`"sbxabc"`}, "deny_all": {`"sbxabc"`}, "dns": {`"sbxabc"`},
		"allow": {`"sbxabc" . 192.0.2.1/32`, `"sbxabc" . 198.51.100.0/24`}, // the name's 198.51.100.9 is within the prefix
		"deny":  {`"sbxabc" . 203.0.113.0/24`}}
	if got := elements(b); !reflect.DeepEqual(got, want) {
		t.Errorf("an allow-list: %v; want %v", got, want)
	}
	script := m.change(elements(b), elements(a))
	wantScript := "delete element inet sbxt deny_all { \"sbxabc\" }\n" +
		"delete element inet sbxt allow { \"sbxabc\" . 192.0.2.1/32, \"sbxabc\" . 198.51.100.0/24 }\n"
	if script != wantScript {
		t.Errorf("change back to the internet:\n%s\nwant:\n%s", script, wantScript)
	}
	if s := m.change(elements(a), elements(a)); s != "" {
		t.Errorf("no change makes a script: %q", s)
	}
	rules := ruleset(Config{Table: "sbxt", Pool: netip.MustParsePrefix("10.201.0.0/16")}, map[string]Attachment{"x": b})
	for _, want := range []string{
		"set allow { type ifname . ipv4_addr; flags interval; elements = { \"sbxabc\" . 192.0.2.1/32, \"sbxabc\" . 198.51.100.0/24 } }",
		"ct direction reply accept\n\t\tct state related accept\n\t\tiifname . ip daddr @deny drop\n\t\tiifname @dns ip daddr @nameservers",
		"ip daddr @blocked drop\n\t\tiifname . ip daddr @allow accept\n\t\tiifname @deny_all drop",
		"169.254.0.0/16",
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("the ruleset lacks %q:\n%s", want, rules)
		}
	}
}

// A name's addresses: seen anew by each lookup that gives them, kept while
// they linger, kept whatever a failed lookup (no entry) says, gone with
// the name.
func TestMerge(t *testing.T) {
	m := &Manager{cfg: Config{ResolveLinger: time.Minute}}
	a1, a2 := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	p := Policy{DenyAll: true, AllowNames: []string{"a.example"}, DenyNames: []string{"b.example"}}
	old := map[string][]Resolved{
		"a.example":    {{Addr: a1, Seen: time.Now().Add(-2 * time.Minute)}, {Addr: a2, Seen: time.Now().Add(-30 * time.Second)}},
		"b.example":    {{Addr: a1, Seen: time.Now().Add(-time.Hour)}},
		"gone.example": {{Addr: a1, Seen: time.Now()}},
	}
	got := m.merge(p, old, map[string][]netip.Addr{"a.example": {}})
	if len(got) != 2 || len(got["a.example"]) != 1 || got["a.example"][0].Addr != a2 || len(got["b.example"]) != 1 {
		t.Errorf("merge = %+v; want a.example's lingering 198.51.100.2 and b.example kept (its lookup failed)", got)
	}
	got = m.merge(p, old, map[string][]netip.Addr{"a.example": {a1}, "b.example": {}})
	if len(got) != 1 || len(got["a.example"]) != 2 || time.Since(got["a.example"][0].Seen) > time.Second {
		t.Errorf("merge = %+v; want a.example's two addresses, 198.51.100.1 seen now, and b.example gone", got)
	}
}
