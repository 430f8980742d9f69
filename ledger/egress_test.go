package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
)

func TestEgressIsRecorded(t *testing.T) { dialects(t, egressIsRecorded) }

// A sandbox's egress policy is recorded with it, changed with an update,
// and read back after a reopen; a row without one reads as none. A
// runtime's configuration holds one too.
func egressIsRecorded(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, err := s.CreateOrg(ctx, "acme", t0)
	if err != nil {
		t.Fatal(err)
	}
	none := newSandbox(org, ws, p, t0)
	withPolicy := newSandbox(org, ws, p, t0)
	allow := sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"203.0.113.0/24", "example.com"}, Deny: []string{"203.0.113.7/32"}}
	withPolicy.Egress = &allow
	for _, sb := range []sbx.Sandbox{none, withPolicy} {
		if err := s.InsertSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.GetSandbox(ctx, org.ID, none.ID); err != nil || got.Egress != nil {
		t.Fatalf("a sandbox recorded without a policy: %+v, %v", got.Egress, err)
	}
	if got, err := s.GetSandbox(ctx, org.ID, withPolicy.ID); err != nil || got.Egress == nil || !got.Egress.Equal(allow) {
		t.Fatalf("the policy recorded: %+v, %v; want %+v", got.Egress, err, allow)
	}
	if _, err := s.UpdateSandbox(ctx, withPolicy.ID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.Egress = &sbx.Egress{Mode: sbx.EgressNone}
		return []sbx.Event{{At: t0, Step: "egress_set", Detail: "none"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, dsn)
	if got, err := s.GetSandbox(ctx, org.ID, withPolicy.ID); err != nil || got.Egress == nil || !got.Egress.Equal(sbx.Egress{Mode: sbx.EgressNone}) {
		t.Fatalf("after an update and a reopen: %+v, %v; want none", got.Egress, err)
	}

	rt, err := s.Runtime(ctx, p.ID)
	if err != nil || rt.Config.Egress != nil {
		t.Fatalf("a new runtime's egress: %+v, %v", rt.Config.Egress, err)
	}
	cfg := rt.Config
	cfg.Egress = &allow
	if got, err := s.SetRuntimeConfig(ctx, org.ID, ws.ID, rt.ID, cfg, t0.Add(time.Second)); err != nil || got.Config.Egress == nil || !got.Config.Egress.Equal(allow) {
		t.Fatalf("a runtime configured with a policy: %+v, %v", got.Config.Egress, err)
	}
	cfg.Egress = nil
	if got, err := s.SetRuntimeConfig(ctx, org.ID, ws.ID, rt.ID, cfg, t0.Add(2*time.Second)); err != nil || got.Config.Egress != nil {
		t.Fatalf("a runtime configured without: %+v, %v", got.Config.Egress, err)
	}
}
