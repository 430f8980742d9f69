package lifecycle_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
)

// withTemplates is the Memory provider with templates that name a default
// egress policy.
type withTemplates struct {
	*providertest.Memory
	defaults map[string]sbx.Egress
	ports    map[string][]int
}

func (w withTemplates) TemplateDefaults(ctx context.Context, name, _ string) (sbx.TemplateDefaults, error) {
	d := sbx.TemplateDefaults{Ports: w.ports[name]}
	if e, ok := w.defaults[name]; ok {
		d.Egress = &e
	}
	return d, nil
}

// unenforced is a provider that enforces no egress policy: only the
// sbx.Provider methods of Memory.
type unenforced struct{ sbx.Provider }

// egressManager is a manager over the env's ledger with egress cfg, on p.
func (e *env) egressManager(p sbx.Provider, cfg lifecycle.EgressConfig) *lifecycle.Manager {
	return lifecycle.New(e.store, []sbx.Provider{p}, lifecycle.Config{DefaultProvider: providertest.MemoryName, Egress: cfg},
		e.clock, slog.New(slog.DiscardHandler))
}

func (e *env) providerEgress(p *providertest.Memory, sb sbx.Sandbox) sbx.Egress {
	e.t.Helper()
	got, err := p.Egress(sb.ProviderSandboxID)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

var allowList = sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"203.0.113.0/24", "example.com"}, Deny: []string{"203.0.113.7/32"}}

// A create's policy is its own, else its template's default, else the
// server's; the provider gets it and the ledger records it.
func TestCreateEgress(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mem := providertest.NewMemory(providertest.MemoryOptions{StateDir: filepath.Join(e.dir, "compute")})
	p := withTemplates{Memory: mem, defaults: map[string]sbx.Egress{"locked": {Mode: sbx.EgressAllow, Allow: []string{"Example.COM"}}}}
	m := e.egressManager(p, lifecycle.EgressConfig{})
	create := func(template string, egress *sbx.Egress) sbx.Sandbox {
		t.Helper()
		req, err := m.Request(lifecycle.Ask{TemplateID: template, Egress: egress, WaitReady: true})
		if err != nil {
			t.Fatal(err)
		}
		sb, err := m.Create(ctx, e.caller, req)
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	for _, c := range []struct {
		template string
		egress   *sbx.Egress
		want     sbx.Egress
	}{
		{"base", nil, sbx.Egress{Mode: sbx.EgressInternet}},
		{"base", &allowList, allowList},
		{"locked", nil, sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"example.com"}}}, // checked, written one way
		{"locked", &sbx.Egress{Mode: sbx.EgressNone}, sbx.Egress{Mode: sbx.EgressNone}},
	} {
		sb := create(c.template, c.egress)
		if got := e.get(sb.ID).Egress; got == nil || !got.Equal(c.want) {
			t.Errorf("%s with %+v: the ledger records %+v; want %+v", c.template, c.egress, got, c.want)
		}
		if got := e.providerEgress(mem, sb); !got.Equal(c.want) {
			t.Errorf("%s with %+v: the provider got %+v; want %+v", c.template, c.egress, got, c.want)
		}
	}

	_, err := m.Request(lifecycle.Ask{TemplateID: "base", Egress: &sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"10.0.0.0/8", "2001:db8::1"}}})
	wantCode(t, err, sbx.EInvalid, "egress.allow[0]: 10.0.0.0/8 is within 10.0.0.0/8 (private)")
	if fields := err.(*sbx.Error).Fields; len(fields) != 2 || fields[1].Field != "egress.allow[1]" {
		t.Errorf("fields %+v; want egress.allow[0] and [1]", fields)
	}
}

// serve --deny-egress: none is the default and the only mode, whoever
// names the policy (a template's default too); --egress-modes lets more.
func TestServerEgressDefaultAndModes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mem := providertest.NewMemory(providertest.MemoryOptions{StateDir: filepath.Join(e.dir, "compute")})
	p := withTemplates{Memory: mem, defaults: map[string]sbx.Egress{"open": {Mode: sbx.EgressInternet}}}
	m := e.egressManager(p, lifecycle.EgressConfig{Default: sbx.Egress{Mode: sbx.EgressNone}, Modes: []sbx.EgressMode{sbx.EgressNone}})
	sb, err := m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", WaitReady: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.get(sb.ID).Egress; got == nil || got.Mode != sbx.EgressNone || e.providerEgress(mem, sb).Mode != sbx.EgressNone {
		t.Errorf("a create that names no policy got %+v; want none", got)
	}
	_, err = m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Egress: &allowList})
	wantCode(t, err, sbx.EForbidden, "egress mode allow (asked for) is not allowed on this server: its operator allows only none (serve --egress-modes)")
	_, err = m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "open"})
	wantCode(t, err, sbx.EForbidden, "egress mode internet (template open's default) is not allowed")
	_, err = m.SetEgress(ctx, e.caller, sb.ID, sbx.Egress{Mode: sbx.EgressInternet})
	wantCode(t, err, sbx.EForbidden, "egress mode internet (asked for) is not allowed")

	m = e.egressManager(p, lifecycle.EgressConfig{Default: sbx.Egress{Mode: sbx.EgressNone}, Modes: []sbx.EgressMode{sbx.EgressNone, sbx.EgressAllow}})
	if _, err := m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Egress: &allowList, WaitReady: true}); err != nil {
		t.Errorf("an allow-list where the operator allows it: %v", err)
	}
}

// A provider that enforces no policy gets only the plain internet, which
// the ledger records as none; anything else is a 501.
func TestEgressOnAProviderThatEnforcesNone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	m := e.egressManager(unenforced{providertest.NewMemory(providertest.MemoryOptions{})}, lifecycle.EgressConfig{})
	sb, err := m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", WaitReady: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.get(sb.ID).Egress; got != nil {
		t.Errorf("the ledger records %+v for a sandbox whose policy nobody enforces", got)
	}
	_, err = m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Egress: &sbx.Egress{Mode: sbx.EgressNone}})
	wantCode(t, err, sbx.EUnsupported, "provider memory does not enforce egress policies: its sandboxes can only have the internet (egress none is asked for)")
	_, err = m.SetEgress(ctx, e.caller, sb.ID, sbx.Egress{Mode: sbx.EgressNone})
	wantCode(t, err, sbx.EUnsupported, "provider memory does not enforce egress policies")
	m = e.egressManager(unenforced{providertest.NewMemory(providertest.MemoryOptions{})}, lifecycle.EgressConfig{Default: sbx.Egress{Mode: sbx.EgressNone}})
	_, err = m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base"})
	wantCode(t, err, sbx.EUnsupported, "(egress none is the server's default)")
}

// SetEgress changes a running, paused or hibernated sandbox's policy on
// the provider and in the ledger, with an egress_set step; a killed one's
// is a 409, a bad policy a 400 naming its fields. A resume gives the
// provider the ledger's policy again.
func TestSetEgress(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(lifecycle.CreateRequest{})
	got, err := e.m.SetEgress(ctx, e.caller, sb.ProviderSandboxID, sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"Example.com.", "203.0.113.0/24"}})
	if err != nil {
		t.Fatal(err)
	}
	want := sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"example.com", "203.0.113.0/24"}}
	if got.Egress == nil || !got.Egress.Equal(want) || !e.get(sb.ID).Egress.Equal(want) || !e.providerEgress(e.prov, sb).Equal(want) {
		t.Errorf("after SetEgress: answer %+v, ledger %+v, provider %+v; want %+v", got.Egress, e.get(sb.ID).Egress, e.providerEgress(e.prov, sb), want)
	}
	events, _ := e.store.Events(ctx, sb.ID)
	if last := events[len(events)-1]; last.Step != "egress_set" || last.Detail != "allow example.com, 203.0.113.0/24" {
		t.Errorf("the timeline ends with %+v", last)
	}
	if got.State != sbx.StateRunning || !got.ExpiresAt.Equal(sb.ExpiresAt) {
		t.Errorf("SetEgress changed more than the policy: %+v", got)
	}

	_, err = e.m.SetEgress(ctx, e.caller, sb.ID, sbx.Egress{Mode: "open", Deny: []string{"203.0.113.1/24"}})
	wantCode(t, err, sbx.EInvalid, `mode "open" must be internet, none or allow`)
	if fields := err.(*sbx.Error).Fields; len(fields) != 2 || fields[0].Field != "mode" || fields[1].Field != "deny[0]" {
		t.Errorf("fields %+v; want mode and deny[0]", fields)
	}

	if _, err := e.m.Pause(ctx, e.caller, sb.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.SetEgress(ctx, e.caller, sb.ID, sbx.Egress{Mode: sbx.EgressNone}); err != nil {
		t.Fatalf("SetEgress on a paused sandbox: %v", err)
	}
	if _, err := e.m.Hibernate(ctx, e.caller, sb.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.SetEgress(ctx, e.caller, sb.ID, allowList); err != nil {
		t.Fatalf("SetEgress on a hibernated sandbox: %v", err)
	}
	// The provider's policy drifts from the ledger's (a crash between the
	// two writes); the resume puts the ledger's back.
	if err := e.prov.SetEgress(ctx, sb.Handle, sbx.Egress{Mode: sbx.EgressInternet}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Resume(ctx, e.caller, sb.ID, 0); err != nil {
		t.Fatal(err)
	}
	if got := e.providerEgress(e.prov, sb); !got.Equal(allowList) {
		t.Errorf("after a resume the provider has %+v; want the ledger's %+v", got, allowList)
	}
	if _, err := e.m.Kill(ctx, e.caller, sb.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.m.SetEgress(ctx, e.caller, sb.ID, allowList)
	wantCode(t, err, sbx.EConflict, "cannot set the egress policy of sandbox "+sb.ProviderSandboxID+": it is killed")
	if steps := e.steps(sb); !strings.Contains(steps, "egress_set,pausing,paused,egress_set,hibernating,hibernated,egress_set,resuming,resumed") {
		t.Errorf("timeline %s", steps)
	}
}

// A runtime's configuration may name its sandboxes' policy, checked when
// it is set; its next start makes its sandbox with it.
func TestRuntimeEgress(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rts := lifecycle.NewRuntimes(e.m, e.store)
	rt, err := e.store.Runtime(ctx, e.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = rts.Configure(ctx, rt, lifecycle.RuntimeChange{Egress: &sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"*.example.com"}}})
	wantCode(t, err, sbx.EInvalid, "egress.allow[0]")
	if rt, err = rts.Configure(ctx, rt, lifecycle.RuntimeChange{Egress: &allowList}); err != nil || rt.Config.Egress == nil || !rt.Config.Egress.Equal(allowList) {
		t.Fatalf("configured: %+v, %v", rt.Config.Egress, err)
	}
	done := make(chan error, 1)
	go func() {
		var err error
		rt, err = rts.Start(ctx, e.caller, rt, lifecycle.RuntimeStart{})
		done <- err
	}()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			waiting = false
		case <-time.After(time.Millisecond):
			e.clock.Advance(time.Second) // the ready wait polls the agent on the clock
		}
	}
	sb := e.get(rt.SandboxID)
	if sb.Egress == nil || !sb.Egress.Equal(allowList) || !e.providerEgress(e.prov, sb).Equal(allowList) {
		t.Errorf("the runtime's sandbox has %+v; want %+v", sb.Egress, allowList)
	}
	m := e.egressManager(e.prov, lifecycle.EgressConfig{Default: sbx.Egress{Mode: sbx.EgressNone}, Modes: []sbx.EgressMode{sbx.EgressNone}})
	_, err = lifecycle.NewRuntimes(m, e.store).Configure(ctx, rt, lifecycle.RuntimeChange{Egress: &allowList})
	wantCode(t, err, sbx.EForbidden, "egress mode allow (the runtime's configuration) is not allowed")
}

// A template's ports are a create's when it names none of its own.
func TestTemplatePorts(t *testing.T) {
	e := newEnv(t)
	m := e.egressManager(withTemplates{Memory: e.prov, ports: map[string][]int{"web": {3000, 8080}}}, lifecycle.EgressConfig{})
	for _, tc := range []struct {
		template string
		ports    []int
		want     []int
	}{
		{"web", nil, []int{3000, 8080}},
		{"web", []int{5173}, []int{5173}},
		{"base", nil, nil},
	} {
		sb, err := m.Create(t.Context(), e.caller, lifecycle.CreateRequest{TemplateID: tc.template, Ports: tc.ports, WaitReady: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.get(sb.ID).Ports; !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
			t.Errorf("%s with %v: ports %v, want %v", tc.template, tc.ports, got, tc.want)
		}
	}
}
