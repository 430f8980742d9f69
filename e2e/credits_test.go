package e2e

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/seal"
	"github.com/sbxdev/sbx/internal/testpg"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/pricing"
)

// The wallet over HTTP: prices, settlements, the spending breakdown and
// top-ups, with the operator's routes closed to other keys and every bad
// input a clear 4xx.
func TestCreditsOverHTTP(t *testing.T) {
	s := startServer(t, serverOpts{args: []string{"--meter-interval", "50ms", "--initial-credits", "50"}})
	var rate apiv1.Rate
	s.call("POST", "/api/v1/admin/rates", map[string]any{"resource": "cpu", "credits_per_second": "1"}, 201, &rate)
	if rate.CreditsPerSecond != "1.000000000" || rate.EffectiveAt.IsZero() {
		t.Fatalf("rate %+v", rate)
	}
	var rates apiv1.RateList
	s.call("GET", "/api/v1/rates", nil, 200, &rates)
	if last := rates.Items[len(rates.Items)-1]; last.Resource != "cpu" || last.CreditsPerSecond != "1.000000000" || len(rates.Items) < 5 {
		t.Fatalf("rates %+v", rates.Items)
	}
	s.call("PUT", "/api/v1/admin/orgs/default/plan", map[string]any{"name": "team", "max_sandboxes": 5, "max_vcpu": 8}, 200, nil)
	a := s.create(map[string]any{"waitReady": true, "cpu": 1})
	b := s.create(map[string]any{"waitReady": true, "cpu": 2})
	var sum apiv1.Summary
	s.call("GET", "/api/v1/observability/summary", nil, 200, &sum)
	quotas := map[string]apiv1.Quota{}
	for _, q := range sum.Quotas {
		quotas[q.Name] = q
	}
	if q := quotas["plan_sandboxes"]; q.Limit != 5 || q.Used != 2 || !q.OK || !strings.Contains(q.Detail, "plan team") {
		t.Errorf("summary's plan_sandboxes quota %+v", q)
	}
	if q := quotas["plan_vcpu"]; q.Limit != 8 || q.Used != 3 {
		t.Errorf("summary's plan_vcpu quota %+v", q)
	}
	if q := quotas["credits"]; !q.OK || q.Limit <= 0 || q.Limit > 50 {
		t.Errorf("summary's credits quota %+v", q)
	}
	if _, ok := quotas["plan_memory_mb"]; ok {
		t.Errorf("a limit the plan does not set is listed: %+v", sum.Quotas)
	}
	var cr apiv1.Credits
	deadline := time.Now().Add(15 * time.Second)
	for len(cr.Settlements) < 4 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		s.call("GET", "/api/v1/org/default/credits?limit=10", nil, 200, &cr)
	}
	if len(cr.Settlements) < 4 || cr.Balance == "50.000000" {
		t.Fatalf("the meter settled nothing: %+v", cr)
	}
	if got := s.get(a.ID); got.RunningCredits == "" || got.BilledCredits == "0.000000" {
		t.Errorf("sandbox credits: billed %s running %s", got.BilledCredits, got.RunningCredits)
	}
	for _, sb := range []apiv1.Sandbox{a, b} {
		s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, 200, nil)
	}
	a, b = s.get(a.ID), s.get(b.ID)
	billed := micros(t, a.BilledCredits) + micros(t, b.BilledCredits)

	var sp apiv1.Spending
	s.call("GET", "/api/v1/org/default/credits/spending", nil, 200, &sp)
	r := sp.ByResource
	if micros(t, sp.Total) != billed || micros(t, r.CPU)+micros(t, r.Memory)+micros(t, r.GPU)+micros(t, r.PausedStorage) != billed ||
		micros(t, sp.ByKind["task"]) != billed || micros(t, sp.ByProvider["memory"]) != billed ||
		len(sp.ByProject) != 1 || micros(t, sp.ByProject[0].Credits) != billed || len(sp.Sandboxes) != 2 || sp.Sandboxes[0].SandboxID != b.SandboxID {
		t.Errorf("spending %+v does not sum to the %d micro-credits billed", sp, billed)
	}
	s.call("GET", "/api/v1/org/default/credits", nil, 200, &cr)
	if micros(t, cr.Balance) != 50_000_000-billed {
		t.Errorf("balance %s after %d billed of 50", cr.Balance, billed)
	}
	var bal apiv1.Balance
	s.call("POST", "/api/v1/admin/orgs/default/credits", map[string]any{"credits": "12.5", "note": "test"}, 200, &bal)
	if micros(t, bal.Balance) != 62_500_000-billed {
		t.Errorf("balance after a top-up of 12.5: %s", bal.Balance)
	}

	other := s.otherOrgKey(t)
	s.failKey(other, "POST", "/api/v1/admin/orgs/other/credits", map[string]any{"credits": "1"}, 403, "operator")
	s.failKey(other, "POST", "/api/v1/admin/rates", map[string]any{"resource": "cpu", "credits_per_second": "0"}, 403, "operator")
	s.failKey(other, "GET", "/api/v1/org/default/credits", nil, 404, "org default not found")
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		detail       string
	}{
		{"POST", "/api/v1/admin/orgs/default/credits", map[string]any{"credits": "-1"}, 400, "positive"},
		{"POST", "/api/v1/admin/orgs/default/credits", map[string]any{"credits": "0"}, 400, "positive"},
		{"POST", "/api/v1/admin/orgs/default/credits", map[string]any{"credits": "1.0000001"}, 400, "6 decimals"},
		{"POST", "/api/v1/admin/orgs/default/credits", map[string]any{"credits": "1", "amount": 1}, 400, `unknown field "amount"`},
		{"POST", "/api/v1/admin/orgs/default/credits", nil, 400, "credits"},
		{"POST", "/api/v1/admin/orgs/nope/credits", map[string]any{"credits": "1"}, 404, "org nope not found"},
		{"POST", "/api/v1/admin/rates", map[string]any{"resource": "disk", "credits_per_second": "1"}, 400, "resource"},
		{"POST", "/api/v1/admin/rates", map[string]any{"resource": "gpu", "gpu_share": 30, "credits_per_second": "1"}, 400, "gpu_share"},
		{"POST", "/api/v1/admin/rates", map[string]any{"resource": "cpu", "credits_per_second": "x"}, 400, "credits_per_second"},
		{"POST", "/api/v1/admin/rates", map[string]any{"resource": "cpu", "credits_per_second": "1", "effective_at": "2020-01-01T00:00:00Z"}, 400, "in the past"},
		{"GET", "/api/v1/org/default/credits?limit=0", nil, 400, "limit"},
		{"GET", "/api/v1/org/default/credits?since=1", nil, 400, `unknown query parameter "since"`},
		{"GET", "/api/v1/org/default/credits/spending?from=yesterday", nil, 400, "RFC 3339"},
		{"GET", "/api/v1/org/default/credits/spending?from=" + future, nil, 400, "must be before"},
		{"GET", "/api/v1/rates?x=1", nil, 400, `unknown query parameter "x"`},
	} {
		s.fail(c.method, c.path, c.body, c.status, c.detail)
	}
	s.call("POST", "/api/v1/admin/rates", map[string]any{"resource": "gpu", "gpu_type": "h100", "gpu_share": 50,
		"credits_per_second": "0.0006", "effective_at": future}, 201, &rate)
}

// Two serve processes share one PostgreSQL ledger (and one provider's
// compute): one runs the meter, and when it dies the other takes over.
// Ten sandboxes spend the org's credits down: the balance stops at zero,
// every sandbox ends paused with insufficient_credits, and what they were
// billed is exactly what the org had.
func TestCreditsRunOutAcrossTwoServers(t *testing.T) {
	args := []string{"--database-url", testpg.URL(t), "--meter-interval", "100ms", "--initial-credits", "30"}
	a := startServer(t, serverOpts{args: args})
	b := startPeer(t, a)
	a.call("POST", "/api/v1/admin/rates", map[string]any{"resource": "cpu", "credits_per_second": "1"}, 201, nil)
	var ids []string
	for i := range 10 {
		s := []*server{a, b}[i%2]
		ids = append(ids, s.create(map[string]any{"waitReady": true, "cpu": 1}).ID)
	}
	leader, survivor := a, b
	if !strings.Contains(a.out.String(), "running the meter, the reaper and the warm pools' refill") {
		leader, survivor = b, a
	}
	if strings.Contains(survivor.out.String(), "running the meter, the reaper and the warm pools' refill") {
		t.Fatal("both servers run the meter")
	}
	time.Sleep(time.Second) // ten credits a second: the leader spends a third
	leader.stop(syscall.SIGKILL)

	deadline := time.Now().Add(60 * time.Second)
	for _, id := range ids {
		for sb := survivor.get(id); sb.PauseReason != "insufficient_credits"; sb = survivor.get(id) {
			if time.Now().After(deadline) {
				t.Fatalf("sandbox %s is %s (%s) a minute on\nsurvivor:\n%s", sb.SandboxID, sb.State, sb.PauseReason, survivor.out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !strings.Contains(survivor.out.String(), "running the meter, the reaper and the warm pools' refill") {
		t.Errorf("the survivor never took the meter over")
	}
	var billed int64
	for _, id := range ids {
		billed += micros(t, survivor.get(id).BilledCredits)
	}
	var cr apiv1.Credits
	survivor.call("GET", "/api/v1/org/default/credits", nil, 200, &cr)
	if cr.Balance != "0.000000" || billed != 30_000_000 {
		t.Errorf("balance %s, billed %d: want 0 and the 30 credits the org had", cr.Balance, billed)
	}
	survivor.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, 402, "no credits left")
	var sum apiv1.Summary
	survivor.call("GET", "/api/v1/observability/summary", nil, 200, &sum)
	if !strings.Contains(strings.Join(sum.NextActions, "\n"), "Over quota credits") {
		t.Errorf("the summary does not say the org is out of credits: %q", sum.NextActions)
	}
	survivor.fail("POST", "/api/v1/sandboxes/"+ids[0]+"/resume", nil, 402, "balance 0.000000")
}

// startPeer starts a second serve process like a, on a data directory of
// its own with a's seal key, sharing a's database and compute.
func startPeer(t *testing.T, a *server) *server {
	t.Helper()
	p := &server{t: t, dataDir: t.TempDir(), compute: a.compute, opts: a.opts, key: a.key, http: a.http}
	sealKey, err := os.ReadFile(filepath.Join(a.dataDir, "seal.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dataDir, "seal.key"), sealKey, 0o600); err != nil {
		t.Fatal(err)
	}
	p.addr = freeAddr(t)
	p.url = "http://" + p.addr
	p.start()
	t.Cleanup(func() { p.stop(syscall.SIGKILL) })
	return p
}

// A serve killed again and again while its meter settles every few
// milliseconds loses nothing: after each restart, what the sandboxes were
// billed plus the balance is what the org was given, and the settlements
// sum to what was billed.
func TestMeterKilledMidSettlementLosesNothing(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { meterKilled(t, nil) })
	t.Run("postgres", func(t *testing.T) { meterKilled(t, []string{"--database-url", testpg.URL(t)}) })
}

func meterKilled(t *testing.T, args []string) {
	s := startServer(t, serverOpts{args: append(args, "--meter-interval", "1ms", "--initial-credits", "1000")})
	s.call("POST", "/api/v1/admin/rates", map[string]any{"resource": "cpu", "credits_per_second": "0.5"}, 201, nil)
	var ids []string
	for range 20 {
		ids = append(ids, s.create(map[string]any{"waitReady": true, "cpu": 1}).ID)
	}
	for range 5 {
		time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond)
		s.restart(s.opts) // SIGKILL, then start again on the same ledger
	}
	time.Sleep(100 * time.Millisecond)
	s.stop(syscall.SIGKILL)

	dsn := filepath.Join(s.dataDir, "ledger.db")
	if len(args) > 0 {
		dsn = args[1]
	}
	key, err := seal.LoadOrCreateKey(filepath.Join(s.dataDir, "seal.key"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := ledger.Open(context.Background(), dsn, key)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	org, err := store.GetOrg(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	balance, _ := store.Balance(context.Background(), org.ID)
	var billed int64
	for _, id := range ids {
		sb, err := store.GetSandbox(context.Background(), org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		billed += sb.BilledMicros
	}
	spend, _ := store.Spending(context.Background(), org.ID, time.Unix(0, 0), time.Now().Add(time.Hour))
	var settled int64
	for _, sp := range spend {
		settled += sp.Total
	}
	t.Logf("billed %d, balance %d, settled %d", billed, balance, settled)
	if billed == 0 || billed+balance != 1000_000_000 || settled != billed {
		t.Errorf("billed %d + balance %d = %d, want the 1000 credits given; settlements sum to %d",
			billed, balance, billed+balance, settled)
	}
}

// micros reads a decimal string of credits.
func micros(t *testing.T, credits string) int64 {
	t.Helper()
	n, err := pricing.ParseMicros(credits)
	if err != nil {
		t.Fatalf("credits %q: %v", credits, err)
	}
	return n
}

// sbx credits over a real serve: prices, top-ups, the balance with its
// settlements, and the spending breakdown; bad input is a usage error.
func TestCreditsCLI(t *testing.T) {
	s := startServer(t, serverOpts{args: []string{"--meter-interval", "50ms", "--initial-credits", "10"}})
	if out := s.ok("credits", "set-rate", "cpu", "0.5"); !strings.Contains(out, "cpu costs 0.500000000 credits a second from") {
		t.Errorf("set-rate: %q", out)
	}
	rates := s.ok("credits", "rates")
	if !strings.Contains(rates, "CREDITS PER SECOND") || !strings.Contains(rates, "0.500000000") || !strings.Contains(rates, "any other") {
		t.Errorf("rates:\n%s", rates)
	}
	id := strings.SplitN(s.ok("sandbox", "create", "base", "--wait", "--cpu", "1"), "\n", 2)[0]
	uuid := s.get(id).ID // settlements name the sbx UUID
	balance := s.ok("credits", "balance", "--limit", "5")
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(balance, uuid) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		balance = s.ok("credits", "balance", "--limit", "5")
	}
	if !strings.HasPrefix(balance, "org default: ") || !strings.Contains(balance, "BALANCE AFTER") || !strings.Contains(balance, uuid+"  running") {
		t.Fatalf("balance:\n%s", balance)
	}
	if out := s.ok("credits", "top-up", "default", "2.5", "--note", "cli"); !strings.HasPrefix(out, "org default: ") {
		t.Errorf("top-up: %q", out)
	}
	spending := s.ok("credits", "spending", "--from", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
	if !strings.Contains(spending, "org default spent") || !strings.Contains(spending, "by resource: cpu") || !strings.Contains(spending, id) {
		t.Errorf("spending:\n%s", spending)
	}
	for _, c := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"credits", "balance", "--limit", "0"}, 2, "--limit 0"},
		{[]string{"credits", "spending", "--from", "yesterday"}, 2, "RFC 3339"},
		{[]string{"credits", "top-up", "default"}, 2, "takes ORG CREDITS"},
		{[]string{"credits", "top-up", "default", "lots"}, 1, "positive"},
		{[]string{"credits", "set-rate", "disk", "1"}, 1, "resource"},
	} {
		if _, errOut, code := s.cli(c.args...); code != c.code || !strings.Contains(errOut, c.err) {
			t.Errorf("sbx %s: exit %d, stderr %q; want exit %d containing %q", strings.Join(c.args, " "), code, errOut, c.code, c.err)
		}
	}
}
