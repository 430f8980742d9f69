package lifecycle_test

import (
	"context"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/pricing"
)

// The meter settles what running sandboxes owe; the settlement that
// empties the balance pauses every running sandbox of the org (and of no
// other) with insufficient_credits; creating and resuming are then 402s
// naming the balance, until a top-up.
func TestMeterPausesAnOrgOutOfCredits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// A vCPU-second costs 0.5 credits from now on: the test org's 1000
	// credits last about 250 s of two running sandboxes of 4 vCPU.
	if err := e.store.AddRate(ctx, pricing.Rate{Resource: pricing.CPU, NanosPerSecond: 500_000_000, EffectiveAt: e.clock.Now()}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	res := sbx.Resources{MilliCPU: 4000, MemoryMB: 512}
	a, b := e.create(lifecycle.CreateRequest{Resources: res}), e.create(lifecycle.CreateRequest{Resources: res})
	paused := e.create(lifecycle.CreateRequest{Resources: res})
	if _, err := e.m.Pause(ctx, e.caller, paused.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	other, otherCaller := e.otherOrg(1000)
	theirs, err := e.m.Create(ctx, otherCaller, lifecycle.CreateRequest{TemplateID: "base", Resources: res, WaitReady: true})
	if err != nil {
		t.Fatal(err)
	}

	e.clock.Advance(100 * time.Second)
	e.loops().Meter(ctx)
	if got := e.get(a.ID); got.State != sbx.StateRunning || got.BilledMicros < 200_000_000 {
		t.Fatalf("after 100 s: %s, billed %d", got.State, got.BilledMicros)
	}
	if running := e.m.Running(e.get(a.ID)); running != 0 {
		t.Errorf("running credits right after a settlement: %d", running)
	}
	e.clock.Advance(10 * time.Second)
	// 10 s of 4 vCPU, and of 512 MB at the default price (22.5 micro-credits,
	// plus what the last settlement carried).
	if running := e.m.Running(e.get(a.ID)); running < 20_000_022 || running > 20_000_023 {
		t.Errorf("running credits 10 s after a settlement: %d", running)
	}

	e.clock.Advance(200 * time.Second) // more than is left
	e.loops().Meter(ctx)
	for _, sb := range []sbx.Sandbox{a, b} {
		if got := e.get(sb.ID); got.State != sbx.StatePaused || got.PauseReason != sbx.PauseInsufficientCredits {
			t.Errorf("%s: %s (%s), want paused for insufficient_credits", sb.ProviderSandboxID, got.State, got.PauseReason)
		}
	}
	if got := e.get(paused.ID); got.PauseReason != sbx.PauseUser {
		t.Errorf("a sandbox paused before: pause reason %s", got.PauseReason)
	}
	if got := e.get(theirs.ID); got.State != sbx.StateRunning {
		t.Errorf("another org's sandbox is %s", got.State)
	}
	balance, _ := e.store.Balance(ctx, e.caller.Org.ID)
	var billed int64
	for _, sb := range []sbx.Sandbox{a, b, paused} {
		billed += e.get(sb.ID).BilledMicros
	}
	if balance != 0 || billed != 1_000_000_000 {
		t.Errorf("balance %d and billed %d, want 0 and all of the 1000 credits", balance, billed)
	}

	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base"})
	wantCode(t, err, sbx.ENoCredits, "balance 0.000000")
	_, err = e.m.Resume(ctx, e.caller, a.ID, 0)
	wantCode(t, err, sbx.ENoCredits, "top up")
	if _, err := e.store.TopUp(ctx, e.caller.Org.ID, 10_000_000, "more", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got, err := e.m.Resume(ctx, e.caller, a.ID, 0); err != nil || got.State != sbx.StateRunning || got.PauseReason != "" {
		t.Fatalf("resume after a top-up: %+v, %v", got, err)
	}
	if b, _ := e.store.Balance(ctx, other.ID); b >= 1000_000_000 || b <= 0 {
		t.Errorf("the other org's balance %d", b)
	}
}

// otherOrg makes a second org with credits and answers a caller for it.
func (e *env) otherOrg(credits int64) (sbx.Org, sbx.Caller) {
	e.t.Helper()
	ctx := context.Background()
	org, _, _, err := e.store.CreateOrg(ctx, "other", e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.TopUp(ctx, org.ID, credits*1_000_000, "tests", e.clock.Now()); err != nil {
		e.t.Fatal(err)
	}
	_, secret, _ := e.store.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, Name: "admin"}, e.clock.Now())
	c, err := e.store.Authenticate(ctx, secret)
	if err != nil {
		e.t.Fatal(err)
	}
	return org, c
}

// Every state change settles what came before it at the old state's
// prices: a sandbox paused after 60 s running owes 60 s of running, and
// from then on only the storage of what it holds.
func TestStateChangesSettle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sb := e.create(lifecycle.CreateRequest{Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 1024}})
	e.clock.Advance(60 * time.Second)
	got, err := e.m.Pause(ctx, e.caller, sb.ID, sbx.PauseUser)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(60 * (14_000 + 4_500) / 1000); got.BilledMicros != want || !got.LastSettledAt.Equal(e.clock.Now()) {
		t.Errorf("after the pause: billed %d, settled %s; want %d at %s", got.BilledMicros, got.LastSettledAt, want, e.clock.Now())
	}
	e.clock.Advance(1000 * time.Second)
	if running := e.m.Running(e.get(sb.ID)); running != 1000*40/1000 { // a GiB held for 1000 s
		t.Errorf("running credits while paused: %d", running)
	}
	killed, err := e.m.Kill(ctx, e.caller, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if killed.BilledMicros != got.BilledMicros+40 {
		t.Errorf("billed %d after the kill, want %d", killed.BilledMicros, got.BilledMicros+40)
	}
	e.clock.Advance(time.Hour)
	e.loops().Meter(ctx)
	if final := e.get(sb.ID); final.BilledMicros != killed.BilledMicros || e.m.Running(final) != 0 {
		t.Errorf("a killed sandbox went on accruing: %d", final.BilledMicros)
	}
}
