package e2bapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
)

// E2B's internet access and network map onto sbx's egress policies, and
// what sbx cannot honour is refused by name.
func TestEgressOf(t *testing.T) {
	no, yes := false, true
	for _, c := range []struct {
		name     string
		internet *bool
		n        *network
		want     *sbx.Egress
		refused  string
	}{
		{name: "unsaid", want: nil},
		{name: "internet", internet: &yes, want: &sbx.Egress{Mode: sbx.EgressInternet}},
		{name: "no internet", internet: &no, want: &sbx.Egress{Mode: sbx.EgressNone}},
		{name: "deny all", n: &network{DenyOut: []string{allTraffic}}, want: &sbx.Egress{Mode: sbx.EgressNone}},
		{name: "allow list", n: &network{AllowOut: []string{"1.1.1.1", "example.com"}, DenyOut: []string{allTraffic}},
			want: &sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"1.1.1.1", "example.com"}}},
		{name: "allow list without internet", internet: &no, n: &network{AllowOut: []string{"1.1.1.1"}},
			want: &sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"1.1.1.1"}}},
		{name: "deny list", n: &network{DenyOut: []string{"10.0.0.0/8"}}, want: &sbx.Egress{Mode: sbx.EgressInternet, Deny: []string{"10.0.0.0/8"}}},
		{name: "egress proxy", n: &network{EgressProxy: json.RawMessage(`{"address":"p:1080"}`)}, refused: "network.egressProxy"},
		{name: "rules", n: &network{Rules: json.RawMessage(`{"api.x.com":[]}`)}, refused: "network.rules"},
		{name: "https ports", n: &network{HTTPSPorts: json.RawMessage(`[3000]`)}, refused: "network.httpsPorts"},
	} {
		var p sbx.Problems
		got, _ := egressOf(&p, c.internet, c.n)
		err := p.Err()
		if c.refused != "" {
			if err == nil || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: %v, want it refused by name", c.name, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, err, c.want)
		}
	}
}

// The list's metadata filter is decoded as the SDKs encode it: a query
// string whose keys and values are percent-encoded once more.
func TestMetadataFilter(t *testing.T) {
	got, err := metadataFilter("k%2520e=v%25261&a=b")
	if err != nil || !reflect.DeepEqual(got, map[string]string{"k e": "v&1", "a": "b"}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := metadataFilter("a=%zz"); err == nil {
		t.Error("a malformed filter was taken")
	}
}
