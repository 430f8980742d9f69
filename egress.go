package sbx

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// A sandbox's egress policy: what it may connect to outside itself. One
// type for every surface (a create, a runtime's configuration, a template's
// default, a live change) and one check of it, CheckEgress; a provider
// enforces it through EgressSetter.
//
// Whatever the policy, a sandbox never reaches the host it runs on, another
// sandbox, or a private, link-local (cloud metadata), loopback, carrier-grade
// NAT, multicast or reserved IPv4 address (EgressUnreachable), nor anything
// over IPv6: a policy narrows the public internet, it never widens it.

// EgressMode is the shape of a policy.
type EgressMode string

// The egress modes.
const (
	// EgressInternet reaches every public IPv4 address, and DNS through the
	// host's resolvers, but what Deny names.
	EgressInternet EgressMode = "internet"
	// EgressNone reaches nothing, not even DNS.
	EgressNone EgressMode = "none"
	// EgressAllow reaches only what Allow names (but what Deny names), and
	// DNS through the host's resolvers when Allow names a domain, so that the
	// sandbox can find its addresses.
	EgressAllow EgressMode = "allow"
)

// EgressModes lists the modes.
var EgressModes = []EgressMode{EgressInternet, EgressNone, EgressAllow}

// Valid reports whether m is one of the modes.
func (m EgressMode) Valid() bool { return slices.Contains(EgressModes, m) }

// Egress is a sandbox's outbound policy. Allow and Deny hold IPv4
// addresses, CIDR prefixes and domain names; a domain stands for the
// addresses the host's resolvers give for it, looked up again while the
// sandbox lives (see local/network). Deny wins over Allow. The zero value
// is the internet.
type Egress struct {
	Mode  EgressMode `json:"mode"`
	Allow []string   `json:"allow,omitempty"` // mode allow only
	Deny  []string   `json:"deny,omitempty"`  // mode internet or allow
}

// Bounds on a policy.
const (
	MaxEgressEntries = 100 // in each of Allow and Deny
	maxDomainBytes   = 253
	maxLabelBytes    = 63
)

// EgressInternetPolicy is the policy of a sandbox nobody gave one.
var EgressInternetPolicy = Egress{Mode: EgressInternet}

// IsInternet reports whether e is the plain internet, with nothing denied:
// what a sandbox gets where no policy is enforced.
func (e Egress) IsInternet() bool {
	return (e.Mode == "" || e.Mode == EgressInternet) && len(e.Allow) == 0 && len(e.Deny) == 0
}

// Equal reports whether e and o are the same policy.
func (e Egress) Equal(o Egress) bool {
	norm := func(m EgressMode) EgressMode {
		if m == "" {
			return EgressInternet
		}
		return m
	}
	return norm(e.Mode) == norm(o.Mode) && slices.Equal(e.Allow, o.Allow) && slices.Equal(e.Deny, o.Deny)
}

// String says the policy in a line: "internet", "none", "allow
// 203.0.113.0/24, example.com", "internet, deny 198.51.100.7/32".
func (e Egress) String() string {
	s := string(e.Mode)
	if s == "" {
		s = string(EgressInternet)
	}
	if len(e.Allow) > 0 {
		s += " " + strings.Join(e.Allow, ", ")
	}
	if len(e.Deny) > 0 {
		s += "; deny " + strings.Join(e.Deny, ", ")
	}
	return s
}

// EgressEntry is one entry of Allow or Deny: a prefix (an address is a /32)
// or a domain name.
type EgressEntry struct {
	Prefix netip.Prefix // valid when the entry is an address or a prefix
	Domain string       // otherwise: the name, lower case, without a final dot
}

// String is the entry as CheckEgress writes it.
func (e EgressEntry) String() string {
	if e.Prefix.IsValid() {
		return e.Prefix.String()
	}
	return e.Domain
}

// EgressEntries parses a checked list (of CheckEgress's answer) into its
// entries.
func EgressEntries(list []string) []EgressEntry {
	out := make([]EgressEntry, 0, len(list))
	for _, s := range list {
		if entry, problem := ParseEgressEntry(s); problem == "" {
			out = append(out, entry)
		}
	}
	return out
}

// unreachable are the IPv4 ranges no sandbox reaches, whatever its policy.
var unreachable = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this" network`},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local, cloud metadata included"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved, broadcast included"},
}

// EgressUnreachable lists the IPv4 ranges no sandbox reaches whatever its
// policy: private, link-local (cloud metadata), loopback, carrier-grade
// NAT, multicast and reserved. (A provider adds its own: its sandboxes'
// addresses and its host's.)
func EgressUnreachable() []netip.Prefix {
	out := make([]netip.Prefix, len(unreachable))
	for i, u := range unreachable {
		out[i] = u.prefix
	}
	return out
}

// ParseEgressEntry reads one entry of a policy's Allow or Deny: an IPv4
// address, an IPv4 prefix without host bits, or a domain name (ASCII, as
// DNS has it: letters, digits and '-' in labels of at most 63 bytes, 253
// in all; a final dot is dropped and upper case lowered). It answers what
// is wrong with s as a sentence, or "".
func ParseEgressEntry(s string) (EgressEntry, string) {
	q := cut(s)
	if s == "" {
		return EgressEntry{}, "an entry is empty: give an IPv4 address, a CIDR prefix or a domain name"
	}
	switch {
	case strings.Contains(s, "://"):
		return EgressEntry{}, fmt.Sprintf("%q is a URL: give its domain name alone", q)
	case strings.Count(s, ":") == 1:
		return EgressEntry{}, fmt.Sprintf("%q: give an address, prefix or domain name without a port (a policy names destinations, all their ports)", q)
	case strings.ContainsAny(s, ":/") || looksNumeric(s):
		return parsePrefix(s, q)
	}
	name := strings.ToLower(strings.TrimSuffix(s, "."))
	switch {
	case strings.HasPrefix(name, "*"):
		return EgressEntry{}, fmt.Sprintf("%q: wildcards are not supported: a domain is resolved on the host into addresses, so list each name", q)
	case strings.IndexFunc(name, func(r rune) bool { return r > 0x7f }) >= 0:
		return EgressEntry{}, fmt.Sprintf("%q: give an internationalized domain name in its ASCII (xn--) form", q)
	case len(name) > maxDomainBytes:
		return EgressEntry{}, fmt.Sprintf("%q: a domain name is at most %d bytes", q, maxDomainBytes)
	case name == "localhost" || strings.HasSuffix(name, ".localhost"):
		return EgressEntry{}, fmt.Sprintf("%q names loopback, which sandboxes never reach", q)
	}
	for label := range strings.SplitSeq(name, ".") {
		if !validLabel(label) {
			return EgressEntry{}, fmt.Sprintf("%q is not an IPv4 address, a CIDR prefix or a domain name (labels of letters, digits and '-', at most %d bytes each, not starting or ending with '-')", q, maxLabelBytes)
		}
	}
	return EgressEntry{Domain: name}, ""
}

// looksNumeric reports whether s is dots and digits only: an address
// attempt, never a domain (no top-level domain is numeric).
func looksNumeric(s string) bool {
	return strings.Trim(s, "0123456789.") == ""
}

func parsePrefix(s, q string) (EgressEntry, string) {
	var p netip.Prefix
	var err error
	if strings.Contains(s, "/") {
		p, err = netip.ParsePrefix(s)
	} else {
		var a netip.Addr
		if a, err = netip.ParseAddr(s); err == nil {
			p = netip.PrefixFrom(a, a.BitLen())
		}
	}
	switch {
	case err != nil && strings.Contains(s, ":"):
		return EgressEntry{}, fmt.Sprintf("%q is not an IPv4 address or prefix (IPv6 is not supported: sandboxes have no IPv6 egress)", q)
	case err != nil:
		return EgressEntry{}, fmt.Sprintf("%q is not an IPv4 address or CIDR prefix", q)
	case !p.Addr().Is4():
		return EgressEntry{}, fmt.Sprintf("%q is IPv6, which is not supported: sandboxes have no IPv6 egress", q)
	case p.Masked() != p:
		return EgressEntry{}, fmt.Sprintf("%q has host bits set; did you mean %s?", q, p.Masked())
	}
	return EgressEntry{Prefix: p}, ""
}

func validLabel(l string) bool {
	if l == "" || len(l) > maxLabelBytes || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for _, r := range l {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// unreachableBy names the range that holds all of p, if one does.
func unreachableBy(p netip.Prefix) (netip.Prefix, string, bool) {
	for _, u := range unreachable {
		if u.prefix.Bits() <= p.Bits() && u.prefix.Contains(p.Addr()) {
			return u.prefix, u.what, true
		}
	}
	return netip.Prefix{}, "", false
}

// CheckEgress checks a policy given in field ("egress", a runtime's field;
// "" for a body that is the policy), adding each problem under the field
// it concerns ("egress.mode", "egress.allow[2]"), and answers it with its
// entries written one way (lower-case names without a final dot, addresses
// as /32 prefixes) and without repeats.
func CheckEgress(p *Problems, field string, e Egress) Egress {
	sub := func(name string) string {
		if field == "" {
			return name
		}
		return field + "." + name
	}
	out := Egress{Mode: e.Mode}
	switch {
	case e.Mode == "":
		p.Add(sub("mode"), "%s is required: internet, none or allow", sub("mode"))
	case !e.Mode.Valid():
		p.Add(sub("mode"), "%s %q must be internet, none or allow", sub("mode"), cut(string(e.Mode)))
	}
	switch {
	case len(e.Allow) > 0 && e.Mode != EgressAllow && e.Mode.Valid():
		p.Add(sub("allow"), "%s is only for mode allow: mode %s %s", sub("allow"), e.Mode,
			map[EgressMode]string{EgressInternet: "reaches every public address already (narrow it with deny)", EgressNone: "reaches nothing"}[e.Mode])
	case len(e.Allow) == 0 && e.Mode == EgressAllow:
		p.Add(sub("allow"), "%s needs at least one address, prefix or domain with mode allow (mode none reaches nothing)", sub("allow"))
	}
	if len(e.Deny) > 0 && e.Mode == EgressNone {
		p.Add(sub("deny"), "%s is only for modes internet and allow: mode none reaches nothing", sub("deny"))
	}
	out.Allow = checkEntries(p, sub("allow"), e.Allow, true)
	out.Deny = checkEntries(p, sub("deny"), e.Deny, false)
	return out
}

// checkEntries checks one list; an allow-list may not name only what no
// sandbox reaches.
func checkEntries(p *Problems, field string, list []string, allow bool) []string {
	if len(list) > MaxEgressEntries {
		p.Add(field, "%s holds %d entries; at most %d", field, len(list), MaxEgressEntries)
		return nil
	}
	var out []string
	for i, s := range list {
		entry, problem := ParseEgressEntry(s)
		at := fmt.Sprintf("%s[%d]", field, i)
		if problem != "" {
			p.Add(at, "%s: %s", at, problem)
			continue
		}
		if r, what, ok := unreachableBy(entry.Prefix); allow && entry.Prefix.IsValid() && ok {
			p.Add(at, "%s: %s is within %s (%s), which sandboxes never reach", at, entry.Prefix, r, what)
			continue
		}
		if w := entry.String(); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// EgressSetter is implemented by providers that enforce a sandbox's
// egress policy: the one in Spec.Egress from its create on, and, through
// SetEgress, a new one on a sandbox that is running, paused or hibernated,
// at once (connections the new policy does not allow end too). SetEgress
// with the policy a sandbox has already changes nothing, so lifecycle may
// apply the ledger's policy again (it does before every resume). A
// provider that does not implement it runs sandboxes whose policy nobody
// enforces: lifecycle gives them none and refuses any other (501).
type EgressSetter interface {
	SetEgress(ctx context.Context, h Handle, e Egress) error
}

// TemplateDefaults is what a template says of the sandboxes made from it:
// a create that names an egress policy or ports of its own does not get
// the template's.
type TemplateDefaults struct {
	Egress  *Egress // the default egress policy; nil: none (the server's)
	Ports   []int   // the ports its sandboxes serve, listed with their preview URLs
	Version string  // the version a create starts from now (a ready snapshot of another is stale)
}

// TemplateDefaulter is implemented by providers whose templates carry
// defaults for their sandboxes: those of a version of the template ("": the
// current one), which an absent version or template is a 404 of.
type TemplateDefaulter interface {
	TemplateDefaults(ctx context.Context, template, version string) (TemplateDefaults, error)
}
