package ledger_test

import (
	"context"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/telemetry"
)

func TestCounts(t *testing.T) { dialects(t, counts) }

// Counts counts sandboxes by provider and state, each warm pool with its
// members by state (a pool without members too), and builds by state.
func counts(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	insert := func(state sbx.State, provider, pool string) {
		sb := newSandbox(org, ws, p, t0)
		sb.State, sb.Provider, sb.Pool = state, provider, pool
		if err := s.InsertSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	for _, pool := range []sbx.Pool{{TemplateID: "base", MinReady: 1, MaxReady: 3}, {TemplateID: "empty", MinReady: 0, MaxReady: 2}} {
		pool.OrgID, pool.WorkspaceID, pool.ProjectID, pool.UpdatedAt = org.ID, ws.ID, p.ID, t0
		if err := s.SetPool(ctx, pool); err != nil {
			t.Fatal(err)
		}
	}
	insert(sbx.StateRunning, "memory", "")
	insert(sbx.StateRunning, "memory", "base")
	insert(sbx.StatePaused, "memory", "")
	insert(sbx.StateKilled, "memory", "base") // final: no member
	insert(sbx.StateRunning, "docker", "")
	c, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[telemetry.SandboxCount]bool{}
	for _, n := range c.Sandboxes {
		got[n] = true
	}
	for _, want := range []telemetry.SandboxCount{{Provider: "memory", State: sbx.StateRunning, N: 2}, {Provider: "memory", State: sbx.StatePaused, N: 1}, {Provider: "memory", State: sbx.StateKilled, N: 1}, {Provider: "docker", State: sbx.StateRunning, N: 1}} {
		if !got[want] {
			t.Errorf("sandbox counts %+v lack %+v", c.Sandboxes, want)
		}
	}
	if len(c.Sandboxes) != 4 {
		t.Errorf("sandbox counts %+v, want 4 rows", c.Sandboxes)
	}
	if len(c.Pools) != 2 || c.Pools[0].Template != "base" || c.Pools[0].MinReady != 1 || c.Pools[0].MaxReady != 3 ||
		len(c.Pools[0].Members) != 1 || c.Pools[0].Members[sbx.StateRunning] != 1 ||
		c.Pools[1].Template != "empty" || c.Pools[1].MaxReady != 2 || len(c.Pools[1].Members) != 0 {
		t.Errorf("pools %+v", c.Pools)
	}
	if len(c.Builds) != 0 {
		t.Errorf("builds %v, want none", c.Builds)
	}
}
