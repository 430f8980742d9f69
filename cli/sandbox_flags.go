package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/spf13/pflag"
)

// The flag types the sandbox verbs share.

// parseDuration reads a positive duration given as seconds ("300") or as a
// Go duration ("5m", "1h30m").
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if n, nerr := strconv.ParseInt(s, 10, 64); nerr == nil {
		d, err = time.Duration(n)*time.Second, nil
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration: give seconds (300) or a duration (5m, 1h30m)", s)
	}
	return d, nil
}

// durationValue is a flag holding a duration given as parseDuration reads it.
type durationValue struct{ d *time.Duration }

func (v durationValue) Set(s string) (err error) { *v.d, err = parseDuration(s); return err }
func (v durationValue) Type() string             { return "duration" }
func (v durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return ""
	}
	return v.d.String()
}

// pairsValue is a repeatable KEY=VALUE flag filling a map.
type pairsValue struct{ m *map[string]string }

func (v pairsValue) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", s)
	}
	if *v.m == nil {
		*v.m = map[string]string{}
	}
	(*v.m)[k] = val
	return nil
}
func (v pairsValue) Type() string { return "KEY=VALUE" }
func (v pairsValue) String() string {
	if v.m == nil {
		return ""
	}
	return pairs(*v.m)
}

// gpuValue is the --gpu flag, TYPE[:COUNT][:FRACTION].
type gpuValue struct{ g **apiv1.GPU }

func (v gpuValue) Set(s string) error {
	parts := strings.Split(s, ":")
	g := &apiv1.GPU{Type: parts[0]}
	bad := parts[0] == "" || len(parts) > 3
	var err error
	if len(parts) > 1 {
		g.Count, err = strconv.Atoi(parts[1])
		bad = bad || err != nil || g.Count < 1
	}
	if len(parts) > 2 {
		g.Fraction, err = strconv.Atoi(strings.TrimSuffix(parts[2], "%"))
		bad = bad || err != nil
	}
	if bad {
		return fmt.Errorf("%q is not TYPE[:COUNT][:FRACTION], for example h100, h100:2 or h100:1:50", s)
	}
	*v.g = g
	return nil
}
func (v gpuValue) Type() string { return "TYPE[:COUNT][:FRACTION]" }
func (v gpuValue) String() string {
	if v.g == nil || *v.g == nil {
		return ""
	}
	return gpuText(**v.g)
}

// egressFlags are the flags that name an egress policy: --egress MODE,
// --egress-allow and --egress-deny (repeatable, or separated by commas).
// Their entries are the server's to check.
type egressFlags struct {
	mode        string
	allow, deny []string
}

// add defines the flags on f; what names what they are about, otherwise
// what it gets without them.
func (e *egressFlags) add(f *pflag.FlagSet, what, otherwise string) {
	f.StringVar(&e.mode, "egress", "", "what "+what+" may connect to: internet, none or allow (default: allow with --egress-allow, internet with only --egress-deny; without any, "+otherwise+")")
	f.StringSliceVar(&e.allow, "egress-allow", nil, "with --egress allow: an IPv4 address, CIDR prefix or domain name it reaches (repeat, or separate with commas)")
	f.StringSliceVar(&e.deny, "egress-deny", nil, "an address, prefix or domain name it never reaches (repeat, or separate with commas)")
}

// policy is the policy the flags name; nil when none of them was given.
func (e *egressFlags) policy() *apiv1.Egress {
	if e.mode == "" && len(e.allow) == 0 && len(e.deny) == 0 {
		return nil
	}
	mode := e.mode
	switch {
	case mode != "":
	case len(e.allow) > 0:
		mode = "allow"
	default:
		mode = "internet"
	}
	return &apiv1.Egress{Mode: mode, Allow: e.allow, Deny: e.deny}
}

// egressText says an egress policy in a line, as sbx sandbox get shows it.
func egressText(e *apiv1.Egress) string {
	if e == nil {
		return ""
	}
	s := e.Mode
	if len(e.Allow) > 0 {
		s += " " + strings.Join(e.Allow, ", ")
	}
	if len(e.Deny) > 0 {
		s += "; deny " + strings.Join(e.Deny, ", ")
	}
	return s
}

// volumesValue is a repeatable NAME:PATH[:ro] flag.
type volumesValue struct{ v *[]apiv1.VolumeMount }

func (v volumesValue) Set(s string) error {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || (len(parts) == 3 && parts[2] != "ro") {
		return fmt.Errorf("%q is not NAME:PATH or NAME:PATH:ro", s)
	}
	*v.v = append(*v.v, apiv1.VolumeMount{Name: parts[0], Path: parts[1], ReadOnly: len(parts) == 3})
	return nil
}

func (v volumesValue) String() string { return "" }

func (v volumesValue) Type() string { return "NAME:PATH[:ro]" }
