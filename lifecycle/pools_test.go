package lifecycle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// operator is a caller with the operator's key in the env's org.
func (e *env) operator() sbx.Caller {
	e.t.Helper()
	_, secret, err := e.store.CreateAPIKey(context.Background(), sbx.APIKey{OrgID: e.caller.Org.ID, Name: "operator", Operator: true}, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := e.store.Authenticate(context.Background(), secret)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// A warm pool is the operator's; the refill starts members to min_ready; a
// create of the template checks one out in each mode that allows it (it
// becomes the caller's, with its own token and metadata, and leaves the
// pool, which refills), falls back to cold saying why when its options
// differ or none is ready, and require then fails with
// warm_pool_unavailable; bypass never uses it.
func TestWarmPools(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := e.operator()
	res := e.m.StartResources(sbx.Resources{})
	_, err := e.m.SetPool(ctx, e.caller, "base", 2, 3, res)
	wantCode(t, err, sbx.EForbidden, "operator")
	if _, err := e.m.SetPool(ctx, op, "base", 2, 3, res); err != nil {
		t.Fatal(err)
	}
	loops := e.loops()
	loops.FillPools(ctx)
	e.m.Wait(ctx)
	pools, err := e.m.Pools(ctx, op)
	if err != nil || len(pools) != 1 || pools[0].Ready != 2 {
		t.Fatalf("pools after a fill: %+v, %v", pools, err)
	}
	// Waiting members pay the paused rate, storage for their memory: no CPU.
	e.clock.Advance(time.Hour)
	loops.Meter(ctx)
	sts, err := e.store.Settlements(ctx, e.caller.Org.ID, 10)
	if err != nil || len(sts) != 2 {
		t.Fatalf("the members' settlements: %+v, %v", sts, err)
	}
	for _, st := range sts {
		if st.CPU != 0 || st.Memory != 0 || st.Storage == 0 {
			t.Errorf("a waiting member paid %+v", st)
		}
	}

	sb := e.create(lifecycle.CreateRequest{Metadata: map[string]string{"mine": "yes"}, Resources: res, Env: map[string]string{"A": "1"}})
	if sb.Pool != "" || sb.ProjectID != e.caller.Project.ID || sb.Metadata["mine"] != "yes" || sb.Metadata[lifecycle.PoolKey] != "" ||
		strings.Join(sb.EnvVarNames, ",") != "A" || !strings.Contains(e.steps(sb), "checked_out") {
		t.Fatalf("a checkout: %+v (%s)", sb, e.steps(sb))
	}
	if pools, _ = e.m.Pools(ctx, op); pools[0].Ready != 1 {
		t.Errorf("after a checkout the pool holds %+v", pools[0])
	}
	loops.FillPools(ctx)
	e.m.Wait(ctx)
	if pools, _ = e.m.Pools(ctx, op); pools[0].Ready != 2 {
		t.Errorf("after a refill the pool holds %+v", pools[0])
	}

	bigger := res
	bigger.MemoryMB *= 2
	cold := e.create(lifecycle.CreateRequest{Resources: bigger})
	if strings.Contains(e.steps(cold), "checked_out") || !strings.Contains(e.timeline(cold)[0].Detail, "cold, not from the warm pool") {
		t.Errorf("a create of another size: %s %+v", e.steps(cold), e.timeline(cold)[0])
	}
	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Resources: bigger, PoolMode: sbx.PoolRequire})
	wantCode(t, err, sbx.ENoWarmSandbox, "not what this create asks")
	bypass := e.create(lifecycle.CreateRequest{Resources: res, PoolMode: sbx.PoolBypass})
	if strings.Contains(e.steps(bypass), "checked_out") {
		t.Error("bypass checked out")
	}

	// Drained: require fails, prefer goes cold.
	e.create(lifecycle.CreateRequest{Resources: res, PoolMode: sbx.PoolRequire})
	e.create(lifecycle.CreateRequest{Resources: res, PoolMode: sbx.PoolRequire})
	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Resources: res, PoolMode: sbx.PoolRequire})
	wantCode(t, err, sbx.ENoWarmSandbox, "has no sandbox ready")

	if err := e.m.DeletePool(ctx, op, "base"); err != nil {
		t.Fatal(err)
	}
	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base", Resources: res, PoolMode: sbx.PoolRequire})
	wantCode(t, err, sbx.ENoWarmSandbox, "has no warm pool")
}

func (e *env) timeline(sb sbx.Sandbox) []sbx.Event {
	e.t.Helper()
	events, err := e.store.Events(context.Background(), sb.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return events
}
