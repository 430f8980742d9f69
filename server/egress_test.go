package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
)

// The operator's word on egress: the internet and every mode by default;
// --deny-egress makes none the default and, alone, the only mode;
// --egress-modes says which, and may not refuse the default.
func TestEgressConfig(t *testing.T) {
	all := []sbx.EgressMode(nil)
	for _, c := range []struct {
		deny    bool
		modes   []sbx.EgressMode
		def     sbx.EgressMode
		allowed []sbx.EgressMode
		err     string
	}{
		{false, nil, sbx.EgressInternet, all, ""},
		{true, nil, sbx.EgressNone, []sbx.EgressMode{sbx.EgressNone}, ""},
		{true, []sbx.EgressMode{sbx.EgressNone, sbx.EgressAllow}, sbx.EgressNone, []sbx.EgressMode{sbx.EgressNone, sbx.EgressAllow}, ""},
		{false, []sbx.EgressMode{sbx.EgressInternet, sbx.EgressAllow}, sbx.EgressInternet, []sbx.EgressMode{sbx.EgressInternet, sbx.EgressAllow}, ""},
		{false, []sbx.EgressMode{sbx.EgressNone}, "", nil, "--egress-modes does not allow the default egress policy, internet: allow it, or make none the default with --deny-egress"},
		{true, []sbx.EgressMode{sbx.EgressAllow}, "", nil, "does not allow the default egress policy, none"},
		{false, []sbx.EgressMode{"open"}, "", nil, `--egress-modes: "open" is not an egress mode`},
	} {
		got, err := egressConfig(Config{DenyEgress: c.deny, EgressModes: c.modes})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("deny %v, modes %v: %v; want %q", c.deny, c.modes, err, c.err)
			}
			continue
		}
		if err != nil || got.Default.Mode != c.def || !slices.Equal(got.Modes, c.allowed) {
			t.Errorf("deny %v, modes %v: %+v, %v; want default %s, modes %v", c.deny, c.modes, got, err, c.def, c.allowed)
		}
	}
}
