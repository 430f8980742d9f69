package lifecycle_test

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
)

// callerOf makes a key as k describes and answers the caller it acts for,
// with the org's plan and verification as they are now.
func (e *env) callerOf(k sbx.APIKey) sbx.Caller {
	e.t.Helper()
	if k.OrgID == "" {
		k.OrgID = e.caller.Org.ID
	}
	if k.Name == "" {
		k.Name = "test"
	}
	_, secret, err := e.store.CreateAPIKey(context.Background(), k, e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := e.store.Authenticate(context.Background(), secret)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// withKYC is a manager over the env's ledger and provider with the KYC gate on.
func (e *env) withKYC() *lifecycle.Manager {
	return lifecycle.New(e.store, []sbx.Provider{e.prov}, lifecycle.Config{DefaultProvider: providertest.MemoryName, RequireKYC: true},
		e.clock, slog.New(slog.DiscardHandler))
}

// members is the member limit over the env's manager.
func (e *env) members() *lifecycle.Members { return lifecycle.NewMembers(e.m, e.store) }

func TestKYCGate(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	gated := e.withKYC()
	base := lifecycle.CreateRequest{TemplateID: "base", WaitReady: true}

	_, err := gated.Create(ctx, e.callerOf(sbx.APIKey{}), base)
	wantCode(t, err, sbx.EKYCRequired, "creating a sandbox needs a verified org or user, and org acme is unverified: "+
		"complete identity verification with the KYC provider of this sbx, or ask the operator of this sbx to verify the org (sbx org verify acme)")

	// A member of the unverified org: verified, the member may create.
	m, _, err := e.store.AddMember(ctx, e.caller.Org.ID, "default", "ada@example.com", "Ada", sbx.RoleMember, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	ada := e.callerOf(sbx.APIKey{UserID: m.User.ID})
	_, err = gated.Create(ctx, ada, base)
	wantCode(t, err, sbx.EKYCRequired, "org acme is unverified and user ada@example.com is unverified")
	e.store.SetUserKYC(ctx, m.User.ID, sbx.KYCPending, e.clock.Now(), false)
	_, err = gated.Create(ctx, e.callerOf(sbx.APIKey{UserID: m.User.ID}), base)
	wantCode(t, err, sbx.EKYCRequired, "user ada@example.com is pending: wait for the verification in progress to complete")
	e.store.SetUserKYC(ctx, m.User.ID, sbx.KYCVerified, e.clock.Now(), false)
	if _, err := gated.Create(ctx, e.callerOf(sbx.APIKey{UserID: m.User.ID}), base); err != nil {
		t.Fatalf("a verified user: %v", err)
	}
	// Still not the org's other keys.
	_, err = gated.Create(ctx, e.callerOf(sbx.APIKey{}), base)
	wantCode(t, err, sbx.EKYCRequired, "org acme is unverified")

	e.store.SetOrgKYC(ctx, e.caller.Org.ID, sbx.KYCVerified, e.clock.Now(), false)
	if _, err := gated.Create(ctx, e.callerOf(sbx.APIKey{}), base); err != nil {
		t.Fatalf("a verified org: %v", err)
	}
	// The gate off: anyone may create.
	e.store.SetOrgKYC(ctx, e.caller.Org.ID, sbx.KYCUnverified, e.clock.Now(), false)
	if _, err := e.m.Create(ctx, e.callerOf(sbx.APIKey{}), base); err != nil {
		t.Fatalf("with the gate off: %v", err)
	}
	// An existing sandbox is not gated: it pauses and resumes.
	sb := e.create(lifecycle.CreateRequest{})
	c := e.callerOf(sbx.APIKey{})
	if _, err := gated.Pause(ctx, c, sb.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	if _, err := gated.Resume(ctx, c, sb.ID, 0); err != nil {
		t.Fatalf("resume of an unverified org's sandbox: %v", err)
	}
}

func TestPlanLimits(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	org := e.caller.Org.ID
	if _, err := e.store.SetPlan(ctx, org, sbx.Plan{MaxSandboxes: 1, MaxTimeout: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	c := e.callerOf(sbx.APIKey{})

	// The default timeout is cut to the plan's; a longer one is refused.
	first, err := e.m.Create(ctx, c, lifecycle.CreateRequest{TemplateID: "base", WaitReady: true})
	if err != nil || first.Timeout != 10*time.Minute {
		t.Fatalf("create with the default timeout: %v, timeout %s", err, first.Timeout)
	}
	_, err = e.m.Create(ctx, c, lifecycle.CreateRequest{TemplateID: "base", Timeout: time.Hour})
	wantCode(t, err, sbx.EPlanLimit, "plan limit: a sandbox's timeout may be at most 600 seconds (asked for 3600)")
	_, err = e.m.Create(ctx, c, lifecycle.CreateRequest{TemplateID: "base"})
	wantCode(t, err, sbx.EPlanLimit, "plan limit: at most 1 concurrent sandboxes (1 running or starting)")
	for name, call := range map[string]func() error{
		"set timeout": func() error { _, err := e.m.SetTimeout(ctx, c, first.ID, 11*time.Minute); return err },
		"connect":     func() error { _, err := e.m.Connect(ctx, c, first.ID, time.Hour); return err },
		"refresh":     func() error { _, err := e.m.Refresh(ctx, c, first.ID, 11*time.Minute); return err },
		"resume":      func() error { _, err := e.m.Resume(ctx, c, first.ID, time.Hour); return err },
	} {
		if err := call(); sbx.ErrorCode(err) != sbx.EPlanLimit || !strings.Contains(err.Error(), "at most 600 seconds") {
			t.Errorf("%s beyond the plan's timeout: %v", name, err)
		}
	}
	if _, err := e.m.SetTimeout(ctx, c, first.ID, 10*time.Minute); err != nil {
		t.Fatalf("a timeout at the plan's limit: %v", err)
	}

	// A paused sandbox holds no compute: another may start, and the paused
	// one may not resume while it runs.
	if _, err := e.m.Pause(ctx, c, first.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	second, err := e.m.Create(ctx, c, lifecycle.CreateRequest{TemplateID: "base", WaitReady: true})
	if err != nil {
		t.Fatalf("create beside a paused sandbox: %v", err)
	}
	_, err = e.m.Resume(ctx, c, first.ID, 0)
	wantCode(t, err, sbx.EPlanLimit, "at most 1 concurrent sandboxes")
	_, err = e.m.Connect(ctx, c, first.ID, 0)
	wantCode(t, err, sbx.EPlanLimit, "at most 1 concurrent sandboxes")
	if got := e.get(first.ID); got.State != sbx.StatePaused || got.Intent != sbx.IntentNone {
		t.Fatalf("a refused resume left %s, intent %q", got.State, got.Intent)
	}
	if _, err := e.m.Kill(ctx, c, second.ID); err != nil {
		t.Fatal(err)
	}
	if r, err := e.m.Resume(ctx, c, first.ID, 0); err != nil || r.State != sbx.StateRunning {
		t.Fatalf("resume once the other is gone: %v", err)
	}

	// vCPU and memory sum the running sandboxes.
	e.store.SetPlan(ctx, org, sbx.Plan{MaxMilliCPU: 3000, MaxMemoryMB: 1024})
	if _, err := e.m.Create(ctx, c, lifecycle.CreateRequest{TemplateID: "base", Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 512}}); err != nil {
		t.Fatalf("a create within the vCPU and memory limits: %v", err)
	}
	_, err = e.m.Create(ctx, c, lifecycle.CreateRequest{TemplateID: "base", Resources: sbx.Resources{MilliCPU: 2500, MemoryMB: 64}})
	wantCode(t, err, sbx.EPlanLimit, "plan limit: at most 3 vCPU across running sandboxes (1 in use, this one asks for 2.5)")
	_, err = e.m.Create(ctx, c, lifecycle.CreateRequest{TemplateID: "base", Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 1000}})
	wantCode(t, err, sbx.EPlanLimit, "plan limit: at most 1024 MB of memory across running sandboxes (512 MB in use, this one asks for 1000 MB)")
}

// states maps the given sandboxes to their state and pause reason now.
func (e *env) states(sbs ...sbx.Sandbox) []string {
	var out []string
	for _, sb := range sbs {
		got := e.get(sb.ID)
		out = append(out, string(got.State)+"/"+string(got.PauseReason))
	}
	return out
}

func TestMemberLimitPausesAndReleases(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	org := e.caller.Org.ID
	if _, err := e.store.SetPlan(ctx, org, sbx.Plan{MaxMembers: 2}); err != nil {
		t.Fatal(err)
	}
	research, rp, err := e.store.CreateWorkspace(ctx, org, "research", "", "", e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	a, b := e.create(lifecycle.CreateRequest{}), e.create(lifecycle.CreateRequest{})
	mine := e.create(lifecycle.CreateRequest{})
	if _, err := e.m.Pause(ctx, e.caller, mine.ID, sbx.PauseUser); err != nil {
		t.Fatal(err)
	}
	elsewhere, err := e.m.Create(ctx, e.callerOf(sbx.APIKey{ProjectID: rp.ID}), lifecycle.CreateRequest{TemplateID: "base", WaitReady: true})
	if err != nil || elsewhere.WorkspaceID != research.ID {
		t.Fatal(err)
	}
	all := []sbx.Sandbox{a, b, mine, elsewhere}

	for _, email := range []string{"ada@example.com", "bob@example.com"} {
		ch, err := e.members().AddMember(ctx, org, "default", email, "", sbx.RoleMember)
		if err != nil || len(ch.Paused) != 0 || ch.Count.Over() {
			t.Fatalf("a member within the limit: %+v %v", ch, err)
		}
	}
	// The third member is added, and the workspace's running compute pauses.
	ch, err := e.members().AddMember(ctx, org, "default", "cy@example.com", "Cy", sbx.RoleMember)
	if err != nil || ch.Member.User.Email != "cy@example.com" || ch.Count.Members != 3 || ch.Count.Max != 2 {
		t.Fatalf("a member beyond the limit: %+v %v", ch, err)
	}
	if ids := sandboxIDs(ch.Paused); ids != sandboxIDs([]sbx.Sandbox{a, b}) {
		t.Errorf("paused %s", ids)
	}
	want := "paused/member_limit_exceeded,paused/member_limit_exceeded,paused/user,running/"
	if got := strings.Join(e.states(all...), ","); got != want {
		t.Fatalf("after the third member: %s, want %s", got, want)
	}
	if got := e.steps(e.get(a.ID)); got != "creating,ready,pausing,paused" {
		t.Errorf("timeline %s", got)
	}
	// While over, nothing in the workspace starts; elsewhere it does.
	_, err = e.m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base"})
	wantCode(t, err, sbx.EPlanLimit, "plan limit: workspace default has 3 members, more than the 2 per workspace the plan allows")
	_, err = e.m.Resume(ctx, e.caller, a.ID, 0)
	wantCode(t, err, sbx.EPlanLimit, "workspace default has 3 members")
	_, err = e.m.Resume(ctx, e.caller, mine.ID, 0)
	wantCode(t, err, sbx.EPlanLimit, "workspace default has 3 members")
	if _, err := e.m.Create(ctx, e.callerOf(sbx.APIKey{ProjectID: rp.ID}), lifecycle.CreateRequest{TemplateID: "base"}); err != nil {
		t.Fatalf("a create in another workspace: %v", err)
	}

	// Back within the limit, what the limit paused resumes; the user's pause stays.
	ch, err = e.members().RemoveMember(ctx, org, "default", "bob@example.com")
	if err != nil || ch.Count.Members != 2 || ch.Member.User.Email != "bob@example.com" {
		t.Fatalf("remove: %+v %v", ch, err)
	}
	if ids := sandboxIDs(ch.Resumed); ids != sandboxIDs([]sbx.Sandbox{a, b}) {
		t.Errorf("resumed %s", ids)
	}
	want = "running/,running/,paused/user,running/"
	if got := strings.Join(e.states(all...), ","); got != want {
		t.Fatalf("after a member left: %s, want %s", got, want)
	}

	// A smaller plan pauses at once; a larger one releases.
	_, paused, _, err := e.members().SetPlan(ctx, org, sbx.Plan{MaxMembers: 1})
	if err != nil || sandboxIDs(paused) != sandboxIDs([]sbx.Sandbox{a, b}) {
		t.Fatalf("a smaller plan paused %s: %v", sandboxIDs(paused), err)
	}
	o, _, resumed, err := e.members().SetPlan(ctx, org, sbx.Plan{Name: "team", MaxMembers: 5})
	if err != nil || o.Plan.Name != "team" || sandboxIDs(resumed) != sandboxIDs([]sbx.Sandbox{a, b}) {
		t.Fatalf("a larger plan resumed %s: %v", sandboxIDs(resumed), err)
	}
	if got := strings.Join(e.states(a, b), ","); got != "running/,running/" {
		t.Fatalf("after a larger plan: %s", got)
	}
}

// A sandbox still starting when its workspace goes over the member limit is
// paused as soon as its create settles.
func TestMemberLimitPausesStartingSandboxes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	slow := providertest.NewMemory(providertest.MemoryOptions{CreateDelay: 50 * time.Millisecond})
	m := lifecycle.New(e.store, []sbx.Provider{slow}, lifecycle.Config{DefaultProvider: providertest.MemoryName}, e.clock, slog.New(slog.DiscardHandler))
	e.store.SetPlan(ctx, e.caller.Org.ID, sbx.Plan{MaxMembers: 1})
	lifecycle.NewMembers(m, e.store).AddMember(ctx, e.caller.Org.ID, "default", "ada@example.com", "", sbx.RoleMember)
	sb, err := m.Create(ctx, e.caller, lifecycle.CreateRequest{TemplateID: "base"})
	if err != nil || sb.State != sbx.StateStarting {
		t.Fatalf("create: %v %s", err, sb.State)
	}
	ch, err := lifecycle.NewMembers(m, e.store).AddMember(ctx, e.caller.Org.ID, "default", "bob@example.com", "", sbx.RoleMember)
	if err != nil || len(ch.Paused) != 1 || ch.Paused[0].State != sbx.StatePaused || ch.Paused[0].PauseReason != sbx.PauseMemberLimitExceeded {
		t.Fatalf("paused %+v, %v", ch.Paused, err)
	}
	if got := e.steps(sb); got != "creating,ready,pausing,paused" {
		t.Errorf("timeline %s", got)
	}
}

func sandboxIDs(sbs []sbx.Sandbox) string {
	var ids []string
	for _, sb := range sbs {
		ids = append(ids, sb.ID)
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}
