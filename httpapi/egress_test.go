package httpapi_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// A sandbox's egress policy over HTTP: given at create, shown in its
// detail, replaced by PUT …/egress (a paused sandbox's too); bad policies
// are 400s naming each bad entry, stale names stay refused, and what a
// policy may not be changes nothing.
func TestEgressOverHTTP(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified"})
	other := s.org(apiv1.CreateOrgRequest{Name: "other", KYCStatus: "verified"})
	key := acme.Secret

	plain := s.create(key, nil)
	if plain.Egress == nil || plain.Egress.Mode != "internet" || len(plain.Egress.Allow)+len(plain.Egress.Deny) != 0 {
		t.Errorf("a create that names no policy shows %+v; want the internet", plain.Egress)
	}
	sb := s.create(key, map[string]any{"egress": map[string]any{"mode": "allow", "allow": []string{"Example.com.", "203.0.113.9", "example.com"},
		"deny": []string{"203.0.113.9/32"}}})
	want := apiv1.Egress{Mode: "allow", Allow: []string{"example.com", "203.0.113.9/32"}, Deny: []string{"203.0.113.9/32"}}
	if !sameEgress(sb.Egress, want) {
		t.Errorf("created with %+v; want %+v", sb.Egress, want)
	}

	// Every bad entry is named, by its index.
	long := make([]string, 101)
	for i := range long {
		long[i] = fmt.Sprintf("198.51.%d.%d", i/256, i%256)
	}
	for _, c := range []struct {
		egress any
		fields []string
		detail string
	}{
		{map[string]any{"mode": "allow", "allow": []string{"203.0.113.0/33", "2001:db8::/32", "bad_name.example", "10.1.2.3", "*.example.com", "203.0.113.1/24"}},
			[]string{"egress.allow[0]", "egress.allow[1]", "egress.allow[2]", "egress.allow[3]", "egress.allow[4]", "egress.allow[5]"},
			`egress.allow[0]: "203.0.113.0/33" is not an IPv4 address or CIDR prefix`},
		{map[string]any{"mode": "allow", "allow": long}, []string{"egress.allow"}, "egress.allow holds 101 entries; at most 100"},
		{map[string]any{"mode": "internet", "deny": long}, []string{"egress.deny"}, "egress.deny holds 101 entries; at most 100"},
		{map[string]any{"mode": "open"}, []string{"egress.mode"}, `egress.mode "open" must be internet, none or allow`},
		{map[string]any{"allow": []string{"example.com"}}, []string{"egress.mode"}, "egress.mode is required"},
		{map[string]any{"mode": "none", "allow": []string{"example.com"}}, []string{"egress.allow"}, "egress.allow is only for mode allow"},
	} {
		e := s.fail(key, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "egress": c.egress}, 400, "invalid", c.detail)
		var fields []string
		for _, f := range e.Errors {
			fields = append(fields, f.Field)
		}
		if !slices.Equal(fields, c.fields) {
			t.Errorf("%v: fields %v; want %v", c.egress, fields, c.fields)
		}
	}
	s.fail(key, "POST", "/api/v1/sandboxes", `{"templateID":"base","egress":{"mode":"none","ports":[80]}}`, 400, "invalid", `unknown field "egress.ports"`)
	for _, stale := range []string{`"network":{"allowOut":["example.com"]}`, `"allow_internet_access":false`, `"secure":true`} {
		s.fail(key, "POST", "/api/v1/sandboxes", `{"templateID":"base",`+stale+`}`, 400, "invalid", "not supported")
	}

	// A live change.
	var got apiv1.Sandbox
	s.call(key, "PUT", "/api/v1/sandboxes/"+sb.SandboxID+"/egress", apiv1.Egress{Mode: "none"}, 200, &got)
	if !sameEgress(got.Egress, apiv1.Egress{Mode: "none"}) || got.State != "running" {
		t.Errorf("after PUT none: %+v %s", got.Egress, got.State)
	}
	s.call(key, "GET", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200, &got)
	if !sameEgress(got.Egress, apiv1.Egress{Mode: "none"}) || !slices.ContainsFunc(got.Timeline, func(e apiv1.Event) bool { return e.Step == "egress_set" && e.Detail == "none" }) {
		t.Errorf("the detail after PUT: %+v, timeline %+v", got.Egress, got.Timeline)
	}
	e := s.fail(key, "PUT", "/api/v1/sandboxes/"+sb.SandboxID+"/egress", `{"mode":"allow","allow":["fd00::1","198.51.100.0/24"],"deny":["x..y"]}`, 400, "invalid", `allow[0]: "fd00::1" is IPv6, which is not supported`)
	if len(e.Errors) != 2 || e.Errors[0].Field != "allow[0]" || e.Errors[1].Field != "deny[0]" {
		t.Errorf("a bad PUT names %+v; want allow[0] and deny[0]", e.Errors)
	}
	s.fail(key, "PUT", "/api/v1/sandboxes/"+sb.SandboxID+"/egress", `{"mode":"internet","network":true}`, 400, "invalid", `"network"`)
	s.fail(key, "PUT", "/api/v1/sandboxes/"+sb.SandboxID+"/egress", `{}`, 400, "invalid", "mode is required")
	s.fail(other.Secret, "PUT", "/api/v1/sandboxes/"+sb.SandboxID+"/egress", apiv1.Egress{Mode: "internet"}, 404, "not_found", "not found")
	s.call(key, "GET", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200, &got)
	if !sameEgress(got.Egress, apiv1.Egress{Mode: "none"}) {
		t.Errorf("refused changes left %+v", got.Egress)
	}
	s.call(key, "POST", "/api/v1/sandboxes/"+sb.SandboxID+"/pause", map[string]any{}, 200, nil)
	s.call(key, "PUT", "/api/v1/sandboxes/"+sb.SandboxID+"/egress", apiv1.Egress{Mode: "internet", Deny: []string{"example.com"}}, 200, &got)
	if got.State != "paused" || !sameEgress(got.Egress, apiv1.Egress{Mode: "internet", Deny: []string{"example.com"}}) {
		t.Errorf("a paused sandbox's change: %s %+v", got.State, got.Egress)
	}
	s.call(key, "DELETE", "/api/v1/sandboxes/"+sb.SandboxID, nil, 200, nil)
	s.fail(key, "PUT", "/api/v1/sandboxes/"+sb.SandboxID+"/egress", apiv1.Egress{Mode: "none"}, 409, "conflict", "cannot set the egress policy of sandbox "+sb.SandboxID+": it is killed")

	// A runtime's configuration.
	var rts apiv1.RuntimeList
	s.call(key, "GET", "/api/v1/org/acme/ws/default/runtimes", nil, 200, &rts)
	path := "/api/v1/org/acme/ws/default/runtimes/" + rts.Items[0].ID
	var rt apiv1.Runtime
	s.call(key, "PATCH", path, map[string]any{"egress": map[string]any{"mode": "allow", "allow": []string{"203.0.113.0/24"}}}, 200, &rt)
	if !sameEgress(rt.Config.Egress, apiv1.Egress{Mode: "allow", Allow: []string{"203.0.113.0/24"}}) {
		t.Errorf("the runtime's configuration: %+v", rt.Config.Egress)
	}
	e = s.fail(key, "PATCH", path, map[string]any{"egress": map[string]any{"mode": "allow", "allow": []string{"169.254.169.254"}}}, 400, "invalid", "169.254.169.254/32 is within 169.254.0.0/16 (link-local, cloud metadata included)")
	if len(e.Errors) != 1 || e.Errors[0].Field != "egress.allow[0]" {
		t.Errorf("a bad runtime egress names %+v", e.Errors)
	}
	s.call(key, "POST", path+"/start", map[string]any{}, 200, &rt)
	if rt.Sandbox == nil || !sameEgress(rt.Sandbox.Egress, apiv1.Egress{Mode: "allow", Allow: []string{"203.0.113.0/24"}}) {
		t.Errorf("the runtime's sandbox: %+v", rt.Sandbox)
	}
}

func sameEgress(got *apiv1.Egress, want apiv1.Egress) bool {
	return got != nil && got.Mode == want.Mode && slices.Equal(got.Allow, want.Allow) && slices.Equal(got.Deny, want.Deny) &&
		!strings.Contains(got.Mode, " ")
}
