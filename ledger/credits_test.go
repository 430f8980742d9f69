package ledger_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/pricing"
)

// flat prices one vCPU and one GiB at 1000 nano-credits a second each, and
// a GiB held while paused at 100.
var flat = pricing.Table{
	{Resource: pricing.CPU, NanosPerSecond: 1000},
	{Resource: pricing.Memory, NanosPerSecond: 1000},
	{Resource: pricing.PausedStorage, NanosPerSecond: 100},
}

// funded makes an org with balance micro-credits and n running sandboxes of
// one vCPU and one GiB, last settled at t0.
func funded(t *testing.T, s *ledger.Store, name string, balance int64, n int) (sbx.Org, []sbx.Sandbox) {
	t.Helper()
	ctx := context.Background()
	org, ws, p, err := s.CreateOrg(ctx, name, t0)
	if err != nil {
		t.Fatal(err)
	}
	if balance > 0 {
		if _, err := s.TopUp(ctx, org.ID, balance, "start", t0); err != nil {
			t.Fatal(err)
		}
	}
	var sbs []sbx.Sandbox
	for range n {
		sb := newSandbox(org, ws, p, t0)
		sb.Resources = sbx.Resources{MilliCPU: 1000, MemoryMB: 1024}
		sb.LastSettledAt = t0
		if err := s.InsertSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		sbs = append(sbs, sb)
	}
	return org, sbs
}

func TestSettleMovesCreditsAndNeverOverdraws(t *testing.T) { dialects(t, settleMovesCredits) }

func settleMovesCredits(t *testing.T, dsn string) {
	ctx := context.Background()
	s := open(t, dsn)
	org, sbs := funded(t, s, "acme", 50, 1)
	id := sbs[0].ID
	st, err := s.Settle(ctx, id, t0.Add(10*time.Second), flat) // 2000 nanos/s × 10 s = 20 micros
	if err != nil {
		t.Fatal(err)
	}
	if st.Owed != 20 || st.Paid != 20 || st.CPU != 10 || st.Memory != 10 || st.BalanceAfter != 30 || st.Emptied() || st.ID == 0 {
		t.Fatalf("first settlement %+v", st)
	}
	if again, err := s.Settle(ctx, id, t0.Add(10*time.Second), flat); err != nil || again.Owed != 0 {
		t.Fatalf("settling the same instant again: %+v, %v", again, err)
	}
	st, err = s.Settle(ctx, id, t0.Add(30*time.Second), flat) // owes 40, 30 left
	if err != nil {
		t.Fatal(err)
	}
	if st.Owed != 40 || st.Paid != 30 || st.CPU != 20 || st.Memory != 10 || st.BalanceAfter != 0 || !st.Emptied() {
		t.Fatalf("settlement that empties the balance %+v", st)
	}
	if b, _ := s.Balance(ctx, org.ID); b != 0 {
		t.Errorf("balance %d, want 0", b)
	}
	sb, _ := s.GetSandbox(ctx, org.ID, id)
	if sb.BilledMicros != 50 || !sb.LastSettledAt.Equal(t0.Add(30*time.Second)) {
		t.Errorf("billed %d settled %s, want 50 at +30s", sb.BilledMicros, sb.LastSettledAt)
	}
	if ids, _ := s.Unfunded(ctx); len(ids) != 1 || ids[0] != id {
		t.Errorf("unfunded %v, want the sandbox", ids)
	}
	if _, err := s.TopUp(ctx, org.ID, 0, "", t0); sbx.ErrorCode(err) != sbx.EInvalid {
		t.Errorf("top-up of 0: %v", err)
	}
	if _, err := s.TopUp(ctx, "nope", 5, "", t0); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("top-up of a missing org: %v", err)
	}
	if b, err := s.TopUp(ctx, org.ID, 7, "more", t0); err != nil || b != 7 {
		t.Errorf("top-up: %d, %v", b, err)
	}
	if ids, _ := s.Unfunded(ctx); len(ids) != 0 {
		t.Errorf("unfunded after the top-up: %v", ids)
	}
	list, err := s.Settlements(ctx, org.ID, 10)
	if err != nil || len(list) != 2 || list[0].Paid != 30 || list[1].Paid != 20 {
		t.Errorf("settlements %+v, %v", list, err)
	}
}

// Below one micro-credit is carried, not lost: 100 settlements of 1.5 micros
// bill 150.
func TestSettleCarriesFractions(t *testing.T) { dialects(t, settleCarriesFractions) }

func settleCarriesFractions(t *testing.T, dsn string) {
	ctx := context.Background()
	s := open(t, dsn)
	org, sbs := funded(t, s, "acme", 1_000_000, 1)
	table := pricing.Table{{Resource: pricing.CPU, NanosPerSecond: 1500}}
	for i := 1; i <= 100; i++ {
		if _, err := s.Settle(ctx, sbs[0].ID, t0.Add(time.Duration(i)*time.Second), table); err != nil {
			t.Fatal(err)
		}
	}
	sb, _ := s.GetSandbox(ctx, org.ID, sbs[0].ID)
	if sb.BilledMicros != 150 {
		t.Errorf("billed %d, want 150", sb.BilledMicros)
	}
}

// A state change settles the time before it at the old state's prices.
func TestStateChangeSettlesAtTheOldState(t *testing.T) { dialects(t, stateChangeSettles) }

func stateChangeSettles(t *testing.T, dsn string) {
	ctx := context.Background()
	s := open(t, dsn)
	org, sbs := funded(t, s, "acme", 1_000_000, 1)
	id := sbs[0].ID
	// The ledger's own table (the defaults) prices the state change.
	sb, err := s.UpdateSandbox(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.State, sb.UpdatedAt = sbx.StatePaused, t0.Add(100*time.Second)
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	running := (14_000 + 4_500) * 100 / 1000 // a vCPU and a GiB for 100 s at the default prices
	if sb.BilledMicros != int64(running) || !sb.LastSettledAt.Equal(t0.Add(100*time.Second)) {
		t.Fatalf("after the pause: billed %d settled %s, want %d at +100s", sb.BilledMicros, sb.LastSettledAt, running)
	}
	st, err := s.Settle(ctx, id, t0.Add(200*time.Second), flat)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != sbx.StatePaused || st.Storage != 10 || st.Paid != 10 { // a GiB held for 100 s at 100 nanos
		t.Errorf("paused settlement %+v", st)
	}
	if b, _ := s.Balance(ctx, org.ID); b != 1_000_000-int64(running)-10 {
		t.Errorf("balance %d", b)
	}
}

// A price set for later applies from then on; earlier time keeps the old.
func TestRateChangesApplyFromTheirTime(t *testing.T) { dialects(t, rateChanges) }

func rateChanges(t *testing.T, dsn string) {
	ctx := context.Background()
	s := open(t, dsn)
	_, sbs := funded(t, s, "acme", 1_000_000, 1)
	change := pricing.Rate{Resource: pricing.CPU, NanosPerSecond: 100_000, EffectiveAt: t0.Add(60 * time.Second)}
	if err := s.AddRate(ctx, change, t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRate(ctx, change, t0.Add(61*time.Second)); sbx.ErrorCode(err) != sbx.EInvalid {
		t.Errorf("a rate effective in the past: %v", err)
	}
	if err := s.AddRate(ctx, pricing.Rate{Resource: "disk", EffectiveAt: t0.Add(time.Hour)}, t0); sbx.ErrorCode(err) != sbx.EInvalid {
		t.Errorf("a rate of an unknown resource: %v", err)
	}
	table, err := s.Rates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.Settle(ctx, sbs[0].ID, t0.Add(100*time.Second), table)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(60*14_000+40*100_000) / 1000; st.CPU != want {
		t.Errorf("cpu %d, want %d (60 s at the old price, 40 at the new)", st.CPU, want)
	}
}

// The breakdown of a time range sums to its settlements.
func TestSpendingSumsTheSettlements(t *testing.T) { dialects(t, spendingSums) }

func spendingSums(t *testing.T, dsn string) {
	ctx := context.Background()
	s := open(t, dsn)
	org, sbs := funded(t, s, "acme", 1_000_000, 3)
	var want int64
	for i, sb := range sbs {
		for k := 1; k <= i+2; k++ {
			st, err := s.Settle(ctx, sb.ID, t0.Add(time.Duration(k)*10*time.Second), flat)
			if err != nil {
				t.Fatal(err)
			}
			want += st.Paid
		}
	}
	spend, err := s.Spending(ctx, org.ID, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	for _, sp := range spend {
		if sp.CPU+sp.Memory+sp.GPU+sp.Storage != sp.Total || sp.Kind != sbx.KindTask || sp.ProjectID == "" {
			t.Errorf("spend row %+v", sp)
		}
		got += sp.Total
	}
	if len(spend) != 3 || got != want || spend[0].SandboxID != sbs[2].ID {
		t.Errorf("spending %+v sums to %d, want 3 rows summing to %d, largest first", spend, got, want)
	}
	if none, _ := s.Spending(ctx, org.ID, t0.Add(time.Hour), t0.Add(2*time.Hour)); len(none) != 0 {
		t.Errorf("spending of a later range: %+v", none)
	}
}

// 200 goroutines settle 50 sandboxes of one org, with top-ups coming in,
// until the balance is gone: it never goes below zero, and what the
// sandboxes were billed plus what is left is what the org had, to the
// micro-credit. The run ends on the ledger's own word (a settlement that
// emptied the balance after the last top-up), not after a time, so a slow
// machine settles as much as a fast one.
func TestConcurrentSettlementsNeverOverdraw(t *testing.T) { dialects(t, concurrentSettlements) }

func concurrentSettlements(t *testing.T, dsn string) {
	ctx := context.Background()
	s := open(t, dsn)
	const start, topUp, topUpCount = 2_000_000, 100_000, 10
	org, sbs := funded(t, s, "acme", start, 50)
	table := pricing.Table{{Resource: pricing.CPU, NanosPerSecond: 1_000_000_000}} // a credit a second per sandbox
	var clock atomic.Int64                                                         // microseconds after t0
	var topUps, toppedUp atomic.Int64
	var spent atomic.Bool
	settle := func(sb sbx.Sandbox) (sbx.Settlement, bool) {
		now := t0.Add(time.Duration(clock.Add(997)) * time.Microsecond)
		st, err := s.Settle(ctx, sb.ID, now, table)
		if err != nil {
			t.Error(err)
		}
		return st, err == nil
	}
	hang := time.Now().Add(5 * time.Minute) // a guard against a ledger that never empties, not a measure of speed
	var wg sync.WaitGroup
	for g := range 200 {
		wg.Go(func() {
			for i := 0; !spent.Load(); i++ {
				if time.Now().After(hang) {
					t.Error("the balance was not spent after 5 minutes of settling")
					return
				}
				last := toppedUp.Load() == topUpCount
				st, ok := settle(sbs[(g+i)%len(sbs)])
				if !ok {
					return
				}
				if last && st.Emptied() {
					spent.Store(true)
				}
				if g == 0 && toppedUp.Load() < topUpCount {
					if _, err := s.TopUp(ctx, org.ID, topUp, "more", t0); err != nil {
						t.Error(err)
						return
					}
					topUps.Add(topUp)
					toppedUp.Add(1)
				}
			}
		})
	}
	wg.Wait()
	for _, sb := range sbs { // each sandbox settled once more, on an empty balance
		settle(sb)
	}
	wg.Wait()
	balance, err := s.Balance(ctx, org.ID)
	if err != nil {
		t.Fatal(err)
	}
	var billed int64
	for _, sb := range sbs {
		got, _ := s.GetSandbox(ctx, org.ID, sb.ID)
		billed += got.BilledMicros
	}
	spend, _ := s.Spending(ctx, org.ID, t0.Add(-time.Hour), t0.Add(24*time.Hour))
	var settled int64
	for _, sp := range spend {
		settled += sp.Total
	}
	t.Logf("balance %d, billed %d, top-ups %d", balance, billed, topUps.Load())
	if balance < 0 || billed+balance != start+topUps.Load() || settled != billed {
		t.Errorf("balance %d + billed %d = %d, want start %d + top-ups %d; settlements sum to %d",
			balance, billed, balance+billed, start, topUps.Load(), settled)
	}
	if balance != 0 {
		t.Errorf("balance %d: the run should have spent it all", balance)
	}
	if ids, _ := s.Unfunded(ctx); len(ids) != len(sbs) {
		t.Errorf("%d sandboxes unfunded, want all %d", len(ids), len(sbs))
	}
}

// An org from before credits gets the credits a first start gives, and its
// sandboxes are billed from the upgrade on, not for the time before.
func TestCreditsMigrationFundsExistingOrgs(t *testing.T) { dialects(t, creditsMigration) }

func creditsMigration(t *testing.T, dsn string) {
	db := migratedBelow(t, dsn, 3)
	long := time.Now().Add(-30 * 24 * time.Hour).UnixMicro()
	for _, stmt := range []string{
		`INSERT INTO orgs (id, name, created_at) VALUES ('o1', 'old', 1)`,
		`INSERT INTO workspaces (id, org_id, name, created_at) VALUES ('w1', 'o1', 'default', 1)`,
		`INSERT INTO projects (id, org_id, workspace_id, name, created_at) VALUES ('p1', 'o1', 'w1', 'default', 1)`,
		fmt.Sprintf(`INSERT INTO sandboxes (id, org_id, workspace_id, project_id, provider, provider_sandbox_id, kind, template_id,
			state, created_at, started_at, timeout_s, milli_cpu, memory_mb, last_settled_at, updated_at)
			VALUES ('00000000-0000-0000-0000-000000000001', 'o1', 'w1', 'p1', 'local', 'iold', 'task', 'base',
			'running', %d, %d, 3600, 2000, 1024, %d, %d)`, long, long, long, long),
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	before := time.Now()
	s := open(t, dsn)
	ctx := context.Background()
	if b, err := s.Balance(ctx, "o1"); err != nil || b != 1_000_000*1_000_000 {
		t.Fatalf("balance of an org from before: %d, %v", b, err)
	}
	sb, err := s.GetSandbox(ctx, "o1", "iold")
	if err != nil || sb.LastSettledAt.Before(before.Add(-time.Minute)) {
		t.Fatalf("a running sandbox from before is settled up to %s, want the upgrade: %v", sb.LastSettledAt, err)
	}
	st, err := s.Settle(ctx, sb.ID, sb.LastSettledAt.Add(time.Second), flat)
	if err != nil || st.Paid != 3 { // a second of 2 vCPU and 1 GiB
		t.Errorf("first settlement after the upgrade: %+v, %v", st, err)
	}
}
