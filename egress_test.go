package sbx

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseEgressEntry(t *testing.T) {
	good := map[string]string{
		"203.0.113.7":      "203.0.113.7/32",
		"203.0.113.0/24":   "203.0.113.0/24",
		"0.0.0.0/0":        "0.0.0.0/0",
		"Example.COM.":     "example.com",
		"api.example.com":  "api.example.com",
		"intranet":         "intranet", // a single label: /etc/hosts names
		"xn--bcher-kva.ch": "xn--bcher-kva.ch",
		"a-b.c-d.example":  "a-b.c-d.example",
		"3com.com":         "3com.com",
	}
	for in, want := range good {
		e, problem := ParseEgressEntry(in)
		if problem != "" || e.String() != want {
			t.Errorf("ParseEgressEntry(%q) = %q, %q; want %q", in, e, problem, want)
		}
	}
	bad := map[string]string{
		"":                                     "an entry is empty",
		"203.0.113.7/33":                       "is not an IPv4 address or CIDR prefix",
		"203.0.113.1/24":                       "has host bits set; did you mean 203.0.113.0/24?",
		"300.1.2.3":                            "is not an IPv4 address or CIDR prefix",
		"1.2.3":                                "is not an IPv4 address or CIDR prefix",
		"2001:db8::1":                          "IPv6, which is not supported",
		"2001:db8::/32":                        "IPv6, which is not supported",
		"::ffff:203.0.113.7":                   "IPv6, which is not supported",
		"fe80::1%eth0":                         "IPv6, which is not supported",
		"2001:db8::zz":                         "IPv6 is not supported",
		"*.example.com":                        "wildcards are not supported",
		"bücher.ch":                            "ASCII (xn--) form",
		"-bad.example.com":                     "is not an IPv4 address, a CIDR prefix or a domain name",
		"bad-.example.com":                     "is not an IPv4 address, a CIDR prefix or a domain name",
		"under_score.example.com":              "is not an IPv4 address, a CIDR prefix or a domain name",
		"two..dots":                            "is not an IPv4 address, a CIDR prefix or a domain name",
		"https://example.com":                  "is a URL: give its domain name alone",
		"example.com:443":                      "without a port",
		"203.0.113.7:443":                      "without a port",
		"localhost":                            "names loopback",
		"app.localhost":                        "names loopback",
		strings.Repeat("a", 64) + ".x":         "is not an IPv4 address, a CIDR prefix or a domain name",
		strings.Repeat("abcdefg.", 32) + "com": "at most 253 bytes",
	}
	for in, want := range bad {
		if e, problem := ParseEgressEntry(in); !strings.Contains(problem, want) {
			t.Errorf("ParseEgressEntry(%q) = %q, %q; want a problem with %q", in, e, problem, want)
		}
	}
}

func TestCheckEgress(t *testing.T) {
	var p Problems
	got := CheckEgress(&p, "egress", Egress{Mode: EgressAllow,
		Allow: []string{"203.0.113.7", "Example.com.", "example.com", "198.51.100.0/24", "0.0.0.0/0"},
		Deny:  []string{"10.0.0.0/8", "evil.example.com", "203.0.113.7/32"}})
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	want := Egress{Mode: EgressAllow, Allow: []string{"203.0.113.7/32", "example.com", "198.51.100.0/24", "0.0.0.0/0"},
		Deny: []string{"10.0.0.0/8", "evil.example.com", "203.0.113.7/32"}}
	if !got.Equal(want) {
		t.Errorf("CheckEgress = %+v; want %+v (written one way, without repeats; a deny may name what no sandbox reaches anyway)", got, want)
	}
	if s := got.String(); s != "allow 203.0.113.7/32, example.com, 198.51.100.0/24, 0.0.0.0/0; deny 10.0.0.0/8, evil.example.com, 203.0.113.7/32" {
		t.Errorf("String = %q", s)
	}
	for _, e := range []Egress{{Mode: EgressInternet}, {Mode: EgressNone}, {Mode: EgressInternet, Deny: []string{"203.0.113.7"}}} {
		var p Problems
		CheckEgress(&p, "egress", e)
		if err := p.Err(); err != nil {
			t.Errorf("%+v: %v", e, err)
		}
	}

	long := make([]string, MaxEgressEntries+1)
	for i := range long {
		long[i] = fmt.Sprintf("203.0.%d.%d", i/256, i%256)
	}
	cases := []struct {
		e      Egress
		fields map[string]string // field → part of its message
	}{
		{Egress{}, map[string]string{"egress.mode": "egress.mode is required: internet, none or allow"}},
		{Egress{Mode: "open"}, map[string]string{"egress.mode": `egress.mode "open" must be internet, none or allow`}},
		{Egress{Mode: EgressAllow}, map[string]string{"egress.allow": "needs at least one address, prefix or domain"}},
		{Egress{Mode: EgressInternet, Allow: []string{"203.0.113.7"}}, map[string]string{"egress.allow": "only for mode allow: mode internet reaches every public address"}},
		{Egress{Mode: EgressNone, Allow: []string{"203.0.113.7"}, Deny: []string{"x.example"}},
			map[string]string{"egress.allow": "mode none reaches nothing", "egress.deny": "only for modes internet and allow"}},
		{Egress{Mode: EgressAllow, Allow: []string{"203.0.113.7", "10.1.0.0/16", "169.254.169.254", "fd00::1", "*.example.com"}},
			map[string]string{
				"egress.allow[1]": "egress.allow[1]: 10.1.0.0/16 is within 10.0.0.0/8 (private), which sandboxes never reach",
				"egress.allow[2]": "169.254.169.254/32 is within 169.254.0.0/16 (link-local, cloud metadata included)",
				"egress.allow[3]": `egress.allow[3]: "fd00::1" is IPv6`,
				"egress.allow[4]": "wildcards are not supported",
			}},
		{Egress{Mode: EgressAllow, Allow: long}, map[string]string{"egress.allow": "egress.allow holds 101 entries; at most 100"}},
		{Egress{Mode: EgressInternet, Deny: long}, map[string]string{"egress.deny": "egress.deny holds 101 entries; at most 100"}},
		{Egress{Mode: EgressInternet, Deny: []string{"203.0.113.1/24"}}, map[string]string{"egress.deny[0]": "did you mean 203.0.113.0/24?"}},
	}
	for _, c := range cases {
		var p Problems
		CheckEgress(&p, "egress", c.e)
		seen := map[string]string{}
		for _, f := range p {
			seen[f.Field] = f.Message
		}
		if len(seen) != len(c.fields) {
			t.Errorf("%+v: problems %v; want one for each of %v", c.e, p, slices.Sorted(mapKeys(c.fields)))
		}
		for field, want := range c.fields {
			if !strings.Contains(seen[field], want) {
				t.Errorf("%+v: %s = %q; want it to say %q", c.e, field, seen[field], want)
			}
		}
		if err := p.Err(); ErrorCode(err) != EInvalid {
			t.Errorf("%+v: %v is no EInvalid", c.e, err)
		}
	}
}

func TestEgressZeroIsTheInternet(t *testing.T) {
	if !(Egress{}).IsInternet() || !(Egress{}).Equal(EgressInternetPolicy) || (Egress{}).String() != "internet" {
		t.Error("the zero policy is not the internet")
	}
	if (Egress{Mode: EgressInternet, Deny: []string{"203.0.113.7/32"}}).IsInternet() || (Egress{Mode: EgressNone}).IsInternet() {
		t.Error("a policy that denies something is the plain internet")
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// A body that is the policy itself names its fields without a prefix.
func TestCheckEgressOfABody(t *testing.T) {
	var p Problems
	CheckEgress(&p, "", Egress{Mode: EgressAllow, Allow: []string{"2001:db8::1"}})
	if len(p) != 1 || p[0].Field != "allow[0]" || !strings.HasPrefix(p[0].Message, `allow[0]: "2001:db8::1" is IPv6`) {
		t.Errorf("problems %+v", p)
	}
	p = nil
	CheckEgress(&p, "", Egress{})
	if len(p) != 1 || p[0].Field != "mode" || p[0].Message != "mode is required: internet, none or allow" {
		t.Errorf("problems %+v", p)
	}
}
