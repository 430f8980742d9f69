package billing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/billing"
	"github.com/sbxdev/sbx/internal/testorg"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/pricing"
)

var t0 = testorg.T0

type clock = testorg.Clock

// org is an org on a real SQLite ledger with a caller of every kind, and
// the operator's key (of an org of its own).
type org struct {
	store                                   *ledger.Store
	svc                                     billing.Service
	made                                    sbx.CreatedOrg
	owner, admin, member, project, operator sbx.Caller
}

func newOrg(t *testing.T) org {
	t.Helper()
	o := testorg.New(t, 1_000_000)
	ws := o.Made.Workspace.ID
	return org{
		store: o.Store, svc: billing.Service{Store: o.Store, Clock: clock{}}, made: o.Made,
		owner: o.Owner, admin: o.Member(ws, "admin@example.com", sbx.RoleAdmin), member: o.Member(ws, "ada@example.com", sbx.RoleMember),
		project: o.Key(sbx.APIKey{ProjectID: o.Made.Project.ID}), operator: o.Operator(),
	}
}

func wantErr(t *testing.T, err error, code sbx.Code, msg string) {
	t.Helper()
	var e *sbx.Error
	if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Message, msg) {
		t.Fatalf("got %v, want %s saying %q", err, code, msg)
	}
}

// The wallet is its org's owners' and admins': members and project keys
// are refused, and another org (even one that exists) is not found.
func TestWalletIsForOwnersAndAdmins(t *testing.T) {
	o := newOrg(t)
	ctx := context.Background()
	for _, c := range []sbx.Caller{o.owner, o.admin} {
		w, err := o.svc.Wallet(ctx, c, "acme", 0)
		if err != nil || w.Balance != 1_000_000 || w.Org.ID != o.made.Org.ID || len(w.Settlements) != 0 {
			t.Fatalf("%s's wallet: %+v %v", c.Role, w, err)
		}
		if _, err := o.svc.Spending(ctx, c, o.made.Org.ID, "", ""); err != nil {
			t.Fatalf("%s's spending by org ID: %v", c.Role, err)
		}
	}
	for _, c := range []sbx.Caller{o.member, o.project} {
		_, err := o.svc.Wallet(ctx, c, "acme", 0)
		wantErr(t, err, sbx.EForbidden, "reading the org's credits needs the admin or owner role")
		_, err = o.svc.Spending(ctx, c, "acme", "", "")
		wantErr(t, err, sbx.EForbidden, "reading the org's credits")
	}
	_, err := o.svc.Wallet(ctx, o.owner, "ops", 0)
	wantErr(t, err, sbx.ENotFound, "org ops not found")
	_, err = o.svc.Spending(ctx, o.owner, "nope", "", "")
	wantErr(t, err, sbx.ENotFound, "org nope not found")
	// The operator's key reads its own org's wallet only.
	_, err = o.svc.Wallet(ctx, o.operator, "acme", 0)
	wantErr(t, err, sbx.ENotFound, "org acme not found")
}

// The spending report sums the settlements of the range every way: by
// project (those that paid, by name), kind, provider, resource and
// sandbox, each summing to the total; the range defaults to the 30 days
// before now and is checked.
func TestSpendingSumsEveryWay(t *testing.T) {
	o := newOrg(t)
	ctx := context.Background()
	zeta, _, err := o.store.CreateProject(ctx, o.made.Org.ID, o.made.Workspace.ID, "zeta", t0)
	if err != nil {
		t.Fatal(err)
	}
	alpha, _, err := o.store.CreateProject(ctx, o.made.Org.ID, o.made.Workspace.ID, "alpha", t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.store.CreateProject(ctx, o.made.Org.ID, o.made.Workspace.ID, "idle", t0); err != nil {
		t.Fatal(err)
	}
	flat := pricing.Table{
		{Resource: pricing.CPU, NanosPerSecond: 1000},
		{Resource: pricing.Memory, NanosPerSecond: 2000},
		{Resource: pricing.PausedStorage, NanosPerSecond: 100},
	}
	start := t0.Add(-2 * time.Hour)
	sandbox := func(p sbx.Project, kind sbx.Kind, provider string, seconds int) sbx.Settlement {
		t.Helper()
		sb := sbx.Sandbox{
			ID: uuid.NewString(), OrgID: o.made.Org.ID, WorkspaceID: p.WorkspaceID, ProjectID: p.ID, Provider: provider,
			ProviderSandboxID: "i" + uuid.NewString()[:8], Kind: kind, TemplateID: "base", State: sbx.StateRunning,
			CreatedAt: start, UpdatedAt: start, StartedAt: start, LastSettledAt: start, Timeout: time.Hour, ExpiresAt: start.Add(time.Hour),
			Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 1024}, AccessToken: "tok",
		}
		if err := o.store.InsertSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		st, err := o.store.Settle(ctx, sb.ID, start.Add(time.Duration(seconds)*time.Second), flat)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	paid := []sbx.Settlement{
		sandbox(zeta, sbx.KindTask, "memory", 10),
		sandbox(alpha, sbx.KindRuntime, "memory", 20),
		sandbox(alpha, sbx.KindTask, "other", 30),
	}
	var total, cpu, mem int64
	for _, st := range paid {
		total, cpu, mem = total+st.Paid, cpu+st.CPU, mem+st.Memory
	}
	if total == 0 || cpu == 0 || mem == 0 {
		t.Fatalf("the settlements paid nothing: %+v", paid)
	}

	sp, err := o.svc.Spending(ctx, o.owner, "acme", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !sp.To.Equal(t0) || !sp.From.Equal(t0.Add(-billing.DefaultSpendingRange)) || sp.Org.Name != "acme" {
		t.Errorf("default range %s..%s of %s, want the 30 days before %s", sp.From, sp.To, sp.Org.Name, t0)
	}
	if sp.Total != total || sp.ByResource != (billing.Resources{CPU: cpu, Memory: mem}) {
		t.Errorf("total %d by resource %+v, want %d (cpu %d, memory %d)", sp.Total, sp.ByResource, total, cpu, mem)
	}
	if len(sp.ByProject) != 2 || sp.ByProject[0].Project.Name != "alpha" || sp.ByProject[1].Project.Name != "zeta" ||
		sp.ByProject[0].Credits != paid[1].Paid+paid[2].Paid || sp.ByProject[1].Credits != paid[0].Paid {
		t.Errorf("by project %+v: want alpha then zeta, idle and default left out", sp.ByProject)
	}
	if len(sp.ByKind) != 2 || sp.ByKind[sbx.KindTask] != paid[0].Paid+paid[2].Paid || sp.ByKind[sbx.KindRuntime] != paid[1].Paid {
		t.Errorf("by kind %+v", sp.ByKind)
	}
	if len(sp.ByProvider) != 2 || sp.ByProvider["memory"] != paid[0].Paid+paid[1].Paid || sp.ByProvider["other"] != paid[2].Paid {
		t.Errorf("by provider %+v", sp.ByProvider)
	}
	var sandboxes int64
	for _, x := range sp.Sandboxes {
		sandboxes += x.Total
	}
	if len(sp.Sandboxes) != 3 || sandboxes != total || sp.Sandboxes[0].SandboxID != paid[2].SandboxID {
		t.Errorf("sandboxes %+v: want 3 summing to %d, largest first", sp.Sandboxes, total)
	}

	// A range that ends before the settlements holds none of them.
	sp, err = o.svc.Spending(ctx, o.admin, "acme", t0.Add(-3*time.Hour).Format(time.RFC3339), start.Format(time.RFC3339))
	if err != nil || sp.Total != 0 || len(sp.Sandboxes) != 0 || len(sp.ByProject) != 0 || len(sp.ByKind) != 0 {
		t.Errorf("an earlier range: %+v %v", sp, err)
	}
	// Only from given: to is now.
	sp, err = o.svc.Spending(ctx, o.admin, "acme", start.Format(time.RFC3339), "")
	if err != nil || sp.Total != total || !sp.To.Equal(t0) {
		t.Errorf("from only: %+v %v", sp, err)
	}
	_, err = o.svc.Spending(ctx, o.owner, "acme", "yesterday", "")
	wantErr(t, err, sbx.EInvalid, `from "yesterday" is not an RFC 3339 time`)
	_, err = o.svc.Spending(ctx, o.owner, "acme", "", "soon")
	wantErr(t, err, sbx.EInvalid, `to "soon" is not an RFC 3339 time`)
	_, err = o.svc.Spending(ctx, o.owner, "acme", t0.Format(time.RFC3339), "")
	wantErr(t, err, sbx.EInvalid, "must be before to")

	// The wallet lists the settlements, newest first, as many as asked.
	w, err := o.svc.Wallet(ctx, o.owner, "acme", 2)
	if err != nil || len(w.Settlements) != 2 || w.Balance != 1_000_000-total {
		t.Errorf("wallet %+v %v: want 2 settlements and %d left", w, err, 1_000_000-total)
	}
}

// Top-ups and rates are the operator's, and their input is checked before
// the ledger is asked.
func TestTopUpsAndRatesAreTheOperators(t *testing.T) {
	o := newOrg(t)
	ctx := context.Background()
	for _, c := range []sbx.Caller{o.owner, o.admin, o.member, o.project} {
		_, err := o.svc.TopUp(ctx, c, "acme", "1", "")
		wantErr(t, err, sbx.EForbidden, "needs the operator's key")
		_, err = o.svc.AddRate(ctx, c, billing.NewRate{Resource: pricing.CPU, CreditsPerSecond: "1"})
		wantErr(t, err, sbx.EForbidden, "needs the operator's key")
	}
	// A forbidden caller learns nothing of its input.
	_, err := o.svc.TopUp(ctx, o.owner, "nope", "-1", "")
	wantErr(t, err, sbx.EForbidden, "operator")

	b, err := o.svc.TopUp(ctx, o.operator, "acme", "12.5", "more")
	if err != nil || b.Balance != 13_500_000 || b.Org.ID != o.made.Org.ID {
		t.Fatalf("top-up: %+v %v", b, err)
	}
	for _, bad := range []string{"0", "-1", "1.0000001", "x", ""} {
		_, err := o.svc.TopUp(ctx, o.operator, "acme", bad, "")
		wantErr(t, err, sbx.EInvalid, "want a positive decimal number with at most 6 decimals")
	}
	_, err = o.svc.TopUp(ctx, o.operator, "nope", "1", "")
	wantErr(t, err, sbx.ENotFound, "org nope not found")

	later := t0.Add(time.Hour)
	r, err := o.svc.AddRate(ctx, o.operator, billing.NewRate{Resource: pricing.CPU, CreditsPerSecond: "0.5", EffectiveAt: &later})
	if err != nil || r.NanosPerSecond != 500_000_000 || !r.EffectiveAt.Equal(later) {
		t.Fatalf("rate: %+v %v", r, err)
	}
	r, err = o.svc.AddRate(ctx, o.operator, billing.NewRate{Resource: pricing.Memory, CreditsPerSecond: "0.000000001"})
	if err != nil || r.NanosPerSecond != 1 || !r.EffectiveAt.Equal(t0) {
		t.Fatalf("a rate from now: %+v %v", r, err)
	}
	_, err = o.svc.AddRate(ctx, o.operator, billing.NewRate{Resource: pricing.CPU, CreditsPerSecond: "x"})
	wantErr(t, err, sbx.EInvalid, "want a decimal number with at most 9 decimals")
	past := t0.Add(-time.Hour)
	_, err = o.svc.AddRate(ctx, o.operator, billing.NewRate{Resource: pricing.CPU, CreditsPerSecond: "1", EffectiveAt: &past})
	wantErr(t, err, sbx.EInvalid, "in the past")

	// Anyone reads the table, the operator's rates in it.
	table, err := o.svc.Rates(ctx, o.project)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rt := range table {
		found = found || rt.Resource == pricing.CPU && rt.NanosPerSecond == 500_000_000 && rt.EffectiveAt.Equal(later)
	}
	if !found {
		t.Errorf("the new rate is not in the table: %+v", table)
	}
}
