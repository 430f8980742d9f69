package tenancy_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
	"github.com/sbxdev/sbx/tenancy"
)

var (
	_ tenancy.Store   = (*ledger.Store)(nil)
	_ tenancy.Compute = (*lifecycle.Members)(nil)
)

// fixture is an org "acme" of a real SQLite ledger with two workspaces
// (ws1, its default, and ws2) and a caller of each kind: the operator (of
// another org), acme's owner key, a member's key of an owner, of an admin
// and of a member of ws1, and a key of ws1's default project.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	store    *ledger.Store
	mgr      *lifecycle.Manager
	svc      *tenancy.Service
	ws1, ws2 sbx.Workspace
	project  sbx.Project // ws1's default project

	operator, owner, ownerMember, admin, member, projectKey sbx.Caller
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	store, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	clock, log := sbx.SystemClock{}, slog.New(slog.DiscardHandler)
	mgr := lifecycle.New(store, []sbx.Provider{providertest.NewMemory(providertest.MemoryOptions{})},
		lifecycle.Config{DefaultProvider: providertest.MemoryName}, clock, log)
	t.Cleanup(func() { mgr.Wait(context.Background()) })
	f := &fixture{t: t, ctx: ctx, store: store, mgr: mgr, svc: tenancy.New(store, authz.Policy{Store: store}, clock, lifecycle.NewMembers(mgr, store))}

	made, err := store.CreateOrgWith(ctx, sbx.NewOrg{Name: "default", KYCStatus: sbx.KYCVerified, Key: sbx.APIKey{Name: "admin", Operator: true}}, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.operator = f.auth(made.Secret)
	acme, err := f.svc.CreateOrg(ctx, f.operator, tenancy.OrgSpec{Name: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	f.owner, f.ws1, f.project = f.auth(acme.Secret), acme.Workspace, acme.Project
	if f.ws2, err = f.svc.CreateWorkspace(ctx, f.owner, "ws2"); err != nil {
		t.Fatal(err)
	}
	f.ownerMember = f.memberKey("olga@acme.test", sbx.RoleOwner)
	f.admin = f.memberKey("ada@acme.test", sbx.RoleAdmin)
	f.member = f.memberKey("max@acme.test", sbx.RoleMember)
	k, secret, err := f.svc.CreateKey(ctx, f.owner, tenancy.KeySpec{Name: "ci", ProjectID: f.project.ID})
	if err != nil || k.Scope() != "project" {
		t.Fatalf("a project's key: %+v %v", k, err)
	}
	f.projectKey = f.auth(secret)
	return f
}

func (f *fixture) auth(secret string) sbx.Caller {
	f.t.Helper()
	c, err := f.svc.Authenticate(f.ctx, secret)
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// memberKey adds a member of ws1 with role, by the owner, and answers the
// caller of a key that acts as them.
func (f *fixture) memberKey(email string, role sbx.Role) sbx.Caller {
	f.t.Helper()
	if _, err := f.svc.AddMember(f.ctx, f.owner, f.ws1, tenancy.MemberSpec{Email: email, Role: role}); err != nil {
		f.t.Fatal(err)
	}
	k, secret, err := f.svc.CreateKey(f.ctx, f.owner, tenancy.KeySpec{Name: "mine", User: email})
	if err != nil || k.Scope() != "member" {
		f.t.Fatalf("a member's key for %s: %+v %v", email, k, err)
	}
	return f.auth(secret)
}

// want checks that err is an *sbx.Error of code whose message holds msg
// (any, when msg is empty), or no error when code is empty.
func want(t *testing.T, what string, err error, code sbx.Code, msg string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		return
	}
	var e *sbx.Error
	if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Message, msg) {
		t.Errorf("%s: got %v, want %s %q", what, err, code, msg)
	}
}

func TestOrgsAreTheOperators(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	for name, c := range map[string]sbx.Caller{"owner": f.owner, "owner member": f.ownerMember, "admin": f.admin, "member": f.member, "project": f.projectKey} {
		const msg = "needs the operator's key"
		_, _, err := f.svc.Orgs(ctx, c, sbx.Page{})
		want(t, name+" lists orgs", err, sbx.EForbidden, msg)
		_, err = f.svc.CreateOrg(ctx, c, tenancy.OrgSpec{Name: "other"})
		want(t, name+" makes an org", err, sbx.EForbidden, msg)
		_, err = f.svc.SetPlan(ctx, c, "acme", tenancy.PlanLimits{MaxSandboxes: 100})
		want(t, name+" sets a plan", err, sbx.EForbidden, msg)
		_, err = f.svc.SetOrgVerification(ctx, c, "acme", sbx.KYCVerified)
		want(t, name+" verifies an org", err, sbx.EForbidden, msg)
		_, err = f.svc.SetUserVerification(ctx, c, "max@acme.test", sbx.KYCVerified)
		want(t, name+" verifies a user", err, sbx.EForbidden, msg)
	}

	orgs, _, err := f.svc.Orgs(ctx, f.operator, sbx.Page{})
	if err != nil || len(orgs) != 2 {
		t.Fatalf("the operator's orgs: %+v %v", orgs, err)
	}
	vcpu := 2.5
	made, err := f.svc.CreateOrg(ctx, f.operator, tenancy.OrgSpec{Name: "beta", Credits: "1.5",
		Plan: &tenancy.PlanLimits{Name: "team", MaxSandboxes: 3, MaxVCPU: &vcpu, MaxTimeout: 600}})
	if err != nil {
		t.Fatal(err)
	}
	if made.Key.Name != "owner" || made.Key.Scope() != "org" || made.Secret == "" || made.Org.KYCStatus != sbx.KYCUnverified ||
		made.Org.Plan != (sbx.Plan{Name: "team", MaxSandboxes: 3, MaxMilliCPU: 2500, MaxTimeout: 10 * time.Minute}) {
		t.Errorf("a new org's defaults and plan: %+v %+v", made.Org, made.Key)
	}
	if balance, err := f.store.Balance(ctx, made.Org.ID); err != nil || balance != 1_500_000 {
		t.Errorf("a new org's credits: %d %v", balance, err)
	}

	_, err = f.svc.CreateOrg(ctx, f.operator, tenancy.OrgSpec{Name: "gamma", Plan: &tenancy.PlanLimits{MaxSandboxes: -1}})
	want(t, "a negative limit", err, sbx.EInvalid, "plan.max_sandboxes must be 0 (no limit) or more")
	_, err = f.svc.CreateOrg(ctx, f.operator, tenancy.OrgSpec{Name: "gamma", Credits: "0"})
	want(t, "no credits", err, sbx.EInvalid, `credits "0"`)
	vcpu = -1
	_, err = f.svc.SetPlan(ctx, f.operator, "acme", tenancy.PlanLimits{MaxVCPU: &vcpu, MaxTimeout: 1 << 32})
	want(t, "a plan's vCPU and timeout", err, sbx.EInvalid, "max_vcpu must be 0 (no limit) or a number of vCPU; max_timeout is too large")
	ch, err := f.svc.SetPlan(ctx, f.operator, "acme", tenancy.PlanLimits{MaxMembers: 10})
	if err != nil || ch.Org.Plan.MaxMembers != 10 {
		t.Errorf("the operator sets a plan: %+v %v", ch, err)
	}

	_, err = f.svc.SetOrgVerification(ctx, f.operator, "acme", "done")
	want(t, "a verification state", err, sbx.EInvalid, `status "done" must be unverified, pending or verified`)
	if o, err := f.svc.SetOrgVerification(ctx, f.operator, "acme", sbx.KYCVerified); err != nil || o.KYCStatus != sbx.KYCVerified {
		t.Errorf("the operator verifies an org: %+v %v", o, err)
	}
	if u, err := f.svc.SetUserVerification(ctx, f.operator, "max@acme.test", sbx.KYCPending); err != nil || u.KYCStatus != sbx.KYCPending {
		t.Errorf("the operator verifies a user: %+v %v", u, err)
	}
}

// A verification service's reports: checked, applied in the order they
// were decided.
func TestRecordVerification(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.RecordVerification(f.ctx, tenancy.Verification{Subject: "team", Status: "ok"})
	want(t, "a bad report", err, sbx.EInvalid, `status "ok" must be unverified, pending or verified; id is required`)
	var e *sbx.Error
	if errors.As(err, &e) && len(e.Fields) != 3 {
		t.Errorf("a bad report names status, id and subject: %+v", e.Fields)
	}
	now := time.Now()
	v, err := f.svc.RecordVerification(f.ctx, tenancy.Verification{Subject: "user", ID: "ada@acme.test", Status: sbx.KYCVerified, At: now})
	if err != nil || !v.Applied || v.Status != sbx.KYCVerified || v.ID != f.admin.User.ID {
		t.Errorf("a report on a user: %+v %v", v, err)
	}
	v, err = f.svc.RecordVerification(f.ctx, tenancy.Verification{Subject: "user", ID: "ada@acme.test", Status: sbx.KYCPending, At: now.Add(-time.Minute)})
	if err != nil || v.Applied || v.Status != sbx.KYCVerified {
		t.Errorf("a report decided before the recorded state: %+v %v", v, err)
	}
	v, err = f.svc.RecordVerification(f.ctx, tenancy.Verification{Subject: "org", ID: "acme", Status: sbx.KYCPending, At: now})
	if err != nil || !v.Applied || v.Status != sbx.KYCPending || v.ID != f.owner.Org.ID {
		t.Errorf("a report on an org: %+v %v", v, err)
	}
}

func TestWorkspacesAndProjects(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	for name, c := range map[string]sbx.Caller{"member": f.member, "project": f.projectKey} {
		_, err := f.svc.CreateWorkspace(ctx, c, "more")
		want(t, name+" makes a workspace", err, sbx.EForbidden, "creating a workspace needs the admin or owner role")
	}
	ws3, err := f.svc.CreateWorkspace(ctx, f.admin, "ws3")
	want(t, "an admin makes a workspace", err, "", "")
	if mem, err := f.store.MemberRole(ctx, ws3.ID, f.admin.User.ID); err != nil || mem != sbx.RoleAdmin {
		t.Errorf("the admin who made a workspace is its admin: %q %v", mem, err)
	}

	// Lists show what a key reaches.
	names := func(c sbx.Caller) string {
		list, _, err := f.svc.Workspaces(ctx, c, sbx.Page{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ws := range list {
			out = append(out, ws.Name)
		}
		return strings.Join(out, ",")
	}
	for c, want := range map[*sbx.Caller]string{&f.owner: "default,ws2,ws3", &f.ownerMember: "default,ws2,ws3", &f.admin: "default,ws3", &f.member: "default", &f.projectKey: "default"} {
		if got := names(*c); got != want {
			t.Errorf("%s's key lists workspaces %s, want %s", c.Key.Name, got, want)
		}
	}

	// Projects: admins make them where they are admins; members list them.
	_, err = f.svc.CreateProject(ctx, f.admin, f.ws1, "web")
	want(t, "an admin makes a project in its workspace", err, "", "")
	_, err = f.svc.CreateProject(ctx, f.admin, f.ws2, "web")
	want(t, "an admin makes a project elsewhere", err, sbx.EForbidden, "in workspace ws2; this key does not reach it")
	_, err = f.svc.CreateProject(ctx, f.member, f.ws1, "api")
	want(t, "a member makes a project", err, sbx.EForbidden, "creating a project needs the admin or owner role in workspace default; this key acts as member there")
	list, _, err := f.svc.Projects(ctx, f.member, f.ws1, sbx.Page{})
	if err != nil || len(list) != 2 {
		t.Errorf("a member lists its workspace's projects: %+v %v", list, err)
	}
	list, _, err = f.svc.Projects(ctx, f.projectKey, f.ws1, sbx.Page{})
	if err != nil || len(list) != 1 || list[0].ID != f.project.ID {
		t.Errorf("a project's key lists its project: %+v %v", list, err)
	}
	_, _, err = f.svc.Projects(ctx, f.member, f.ws2, sbx.Page{})
	want(t, "a member lists another workspace's projects", err, sbx.EForbidden, "listing projects needs")

	// Another org's workspace is not found, by reference or as a value.
	_, err = f.svc.Workspace(ctx, f.owner, f.operator.Workspace.ID)
	want(t, "another org's workspace", err, sbx.ENotFound, "not found")
	_, err = f.svc.CreateProject(ctx, f.owner, f.operator.Workspace, "x")
	want(t, "a project in another org's workspace", err, sbx.ENotFound, "not found")
	_, _, err = f.svc.Members(ctx, f.owner, f.operator.Workspace, sbx.Page{})
	want(t, "another org's members", err, sbx.ENotFound, "not found")
}

func TestMembers(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	add := func(c sbx.Caller, ws sbx.Workspace, email string, role sbx.Role) error {
		_, err := f.svc.AddMember(ctx, c, ws, tenancy.MemberSpec{Email: email, Role: role})
		return err
	}
	want(t, "an unknown role, checked first", add(f.member, f.ws1, "x@acme.test", "boss"), sbx.EInvalid, `role "boss" must be owner, admin or member`)
	want(t, "a member adds one", add(f.member, f.ws1, "x@acme.test", ""), sbx.EForbidden, "adding a member needs the admin or owner role in workspace default")
	want(t, "a project's key adds one", add(f.projectKey, f.ws1, "x@acme.test", ""), sbx.EForbidden, "adding a member needs")
	want(t, "an admin adds an owner", add(f.admin, f.ws1, "x@acme.test", sbx.RoleOwner), sbx.EForbidden, "adding a member as owner needs the owner role; this key acts as admin")
	want(t, "an admin adds one elsewhere", add(f.admin, f.ws2, "x@acme.test", ""), sbx.EForbidden, "does not reach it")
	ch, err := f.svc.AddMember(ctx, f.admin, f.ws1, tenancy.MemberSpec{Email: "x@acme.test", Name: "X"})
	if err != nil || ch.Member.Role != sbx.RoleMember || ch.Member.User.Name != "X" || ch.Count.Members != 4 {
		t.Errorf("an admin adds a member, as member by default: %+v %v", ch, err)
	}
	want(t, "an admin adds an admin", add(f.admin, f.ws1, "y@acme.test", sbx.RoleAdmin), "", "")
	want(t, "an owner's key adds anyone", add(f.ownerMember, f.ws2, "z@acme.test", sbx.RoleOwner), "", "")

	list, _, err := f.svc.Members(ctx, f.member, f.ws1, sbx.Page{})
	if err != nil || len(list) != 5 {
		t.Errorf("a member lists its workspace's members: %d %v", len(list), err)
	}
	_, _, err = f.svc.Members(ctx, f.member, f.ws2, sbx.Page{})
	want(t, "a member lists another workspace's", err, sbx.EForbidden, "listing members needs the member, admin or owner role in workspace ws2")

	_, err = f.svc.RemoveMember(ctx, f.member, f.ws1, "x@acme.test")
	want(t, "a member removes one", err, sbx.EForbidden, "removing a member needs")
	_, err = f.svc.RemoveMember(ctx, f.admin, f.ws1, "olga@acme.test")
	want(t, "an admin removes an owner", err, sbx.EForbidden, "removing a member who is owner needs the owner role")
	_, err = f.svc.RemoveMember(ctx, f.admin, f.ws1, "nobody@acme.test")
	want(t, "an admin removes no one", err, sbx.ENotFound, "")
	ch, err = f.svc.RemoveMember(ctx, f.admin, f.ws1, "x@acme.test")
	if err != nil || ch.Member.User.Email != "x@acme.test" || ch.Count.Members != 4 {
		t.Errorf("an admin removes a member: %+v %v", ch, err)
	}
}

func TestKeys(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	mk := func(c sbx.Caller, spec tenancy.KeySpec) (sbx.APIKey, error) {
		k, _, err := f.svc.CreateKey(ctx, c, spec)
		return k, err
	}
	_, err := mk(f.admin, tenancy.KeySpec{Name: " ", User: "max@acme.test", ProjectID: f.project.ID})
	want(t, "a key's name and kind", err, sbx.EInvalid, "name is required, at most 100 bytes, to tell the key apart (for example \"ci\"); a key is a member's (user) or a project's (project_id), not both")
	_, err = mk(f.admin, tenancy.KeySpec{Name: "x", User: "nobody@acme.test"})
	want(t, "a key of no user", err, sbx.ENotFound, "")

	for name, c := range map[string]sbx.Caller{"member": f.member, "project": f.projectKey} {
		_, err := mk(c, tenancy.KeySpec{Name: "x", ProjectID: f.project.ID})
		want(t, name+" makes a key", err, sbx.EForbidden, "needs the admin or owner role")
	}
	_, err = mk(f.admin, tenancy.KeySpec{Name: "x"})
	want(t, "an admin makes an org-wide key", err, sbx.EForbidden, "making an org-wide key (it acts as an owner of the whole org) needs the owner role")
	_, err = mk(f.admin, tenancy.KeySpec{Name: "x", User: "olga@acme.test"})
	want(t, "an admin makes an owner's key", err, sbx.EForbidden, "needs the owner role")

	k, err := mk(f.admin, tenancy.KeySpec{Name: "  deploy  ", ProjectID: f.project.ID})
	if err != nil || k.Name != "deploy" || k.Scope() != "project" {
		t.Errorf("an admin makes a key of a project it administers: %+v %v", k, err)
	}
	want(t, "an admin makes a member's key", func() error { _, err := mk(f.admin, tenancy.KeySpec{Name: "x", User: "max@acme.test"}); return err }(), "", "")
	ws2p, err := f.svc.CreateProject(ctx, f.owner, f.ws2, "p2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = mk(f.admin, tenancy.KeySpec{Name: "x", ProjectID: ws2p.ID})
	want(t, "an admin makes a key of another workspace's project", err, sbx.EForbidden, "in workspace ws2; this key does not reach it")

	// Revoking follows the same rule.
	_, err = f.svc.RevokeKey(ctx, f.admin, f.owner.Key.ID)
	want(t, "an admin revokes an org-wide key", err, sbx.EForbidden, "revoking an org-wide key")
	_, err = f.svc.RevokeKey(ctx, f.member, k.ID)
	want(t, "a member revokes a key", err, sbx.EForbidden, "revoking a key of project")
	_, err = f.svc.RevokeKey(ctx, f.owner, f.operator.Key.ID)
	want(t, "a key of another org", err, sbx.ENotFound, "")
	if r, err := f.svc.RevokeKey(ctx, f.admin, k.ID); err != nil || r.RevokedAt.IsZero() {
		t.Errorf("an admin revokes a key it could make: %+v %v", r, err)
	}
	list, _, err := f.svc.Keys(ctx, f.member, sbx.Page{})
	if err != nil || len(list) < 6 {
		t.Errorf("a member lists the org's keys: %d %v", len(list), err)
	}
}

// A member beyond the plan's limit pauses the workspace's compute, and
// removing one resumes it (through Compute, lifecycle.Manager); so does a
// plan that lowers or raises the limit.
func TestMemberLimitPausesCompute(t *testing.T) {
	f := newFixture(t)
	ctx := f.ctx
	if _, err := f.store.TopUp(ctx, f.owner.Org.ID, 10_000_000, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	sb, err := f.mgr.Create(ctx, f.member, lifecycle.CreateRequest{TemplateID: "base", Kind: sbx.KindTask, WaitReady: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetPlan(ctx, f.operator, "acme", tenancy.PlanLimits{MaxMembers: 3}); err != nil {
		t.Fatal(err)
	}
	ch, err := f.svc.AddMember(ctx, f.admin, f.ws1, tenancy.MemberSpec{Email: "x@acme.test"})
	if err != nil || ch.Count != (sbx.MemberCount{Members: 4, Max: 3}) || len(ch.Paused) != 1 || ch.Paused[0].ID != sb.ID ||
		ch.Paused[0].PauseReason != sbx.PauseMemberLimitExceeded {
		t.Fatalf("a fourth member of three: %+v %v", ch, err)
	}
	ch, err = f.svc.RemoveMember(ctx, f.admin, f.ws1, "x@acme.test")
	if err != nil || len(ch.Resumed) != 1 || ch.Resumed[0].State != sbx.StateRunning {
		t.Fatalf("back to three: %+v %v", ch, err)
	}
	pc, err := f.svc.SetPlan(ctx, f.operator, "acme", tenancy.PlanLimits{MaxMembers: 2})
	if err != nil || len(pc.Paused) != 1 {
		t.Fatalf("a plan of two: %+v %v", pc, err)
	}
	pc, err = f.svc.SetPlan(ctx, f.operator, "acme", tenancy.PlanLimits{})
	if err != nil || len(pc.Resumed) != 1 {
		t.Fatalf("a plan with no limit: %+v %v", pc, err)
	}
}

// racingStore is the ledger, with a removal of a member that races the
// check of that member's role (by the first read of it).
type racingStore struct {
	*ledger.Store
	user    string
	race    func()
	removed bool // the removal committed before the check's read returned
}

func (s *racingStore) MemberRole(ctx context.Context, workspaceID, userID string) (sbx.Role, error) {
	role, err := s.Store.MemberRole(ctx, workspaceID, userID)
	s.raceOn(userID)
	return role, err
}

func (s *racingStore) Memberships(ctx context.Context, orgID, userID string) ([]sbx.Member, error) {
	ms, err := s.Store.Memberships(ctx, orgID, userID)
	s.raceOn(userID)
	return ms, err
}

// raceOn starts the race, once, when userID's role was just read.
func (s *racingStore) raceOn(userID string) {
	if userID == s.user && s.race != nil {
		race, done := s.race, make(chan struct{})
		s.race = nil
		go func() { race(); close(done) }()
		select { // long enough for the removal to commit were it not held back
		case <-done:
			s.removed = true
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// TestKeysAreMadeInTheTransactionThatAllowsThem: an admin's role is read
// and its key written in one transaction, so the admin's removal, racing
// them, lands after the key (which its removal then no longer lets it
// make) and not between the check and the write.
func TestKeysAreMadeInTheTransactionThatAllowsThem(t *testing.T) {
	f := newFixture(t)
	removed := make(chan error, 1)
	racing := &racingStore{Store: f.store, user: f.admin.User.ID, race: func() {
		_, _, err := f.store.RemoveMember(context.Background(), f.ws1.OrgID, f.ws1.ID, f.admin.User.ID)
		removed <- err
	}}
	svc := tenancy.New(racing, authz.Policy{Store: racing}, sbx.SystemClock{}, lifecycle.NewMembers(f.mgr, f.store))
	_, _, err := svc.CreateKey(f.ctx, f.admin, tenancy.KeySpec{Name: "max's", User: "max@acme.test"})
	want(t, "an admin makes a member's key", err, "", "")
	if racing.removed {
		t.Error("the admin was removed between the check of its role and the key's write")
	}
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.CreateKey(f.ctx, f.admin, tenancy.KeySpec{Name: "again", User: "max@acme.test"})
	want(t, "a removed admin", err, sbx.EForbidden, "this key's member is no longer in any workspace of the org")
}

// An owner's key makes an org-wide key with its member's role read again
// in the write's transaction (not as authentication found it): the
// owner's removal, racing, lands after the key, and then refuses the next.
func TestAnOwnersRoleIsReadAgainInTheTransaction(t *testing.T) {
	f := newFixture(t)
	removed := make(chan error, 1)
	racing := &racingStore{Store: f.store, user: f.ownerMember.User.ID, race: func() {
		_, _, err := f.store.RemoveMember(context.Background(), f.ws1.OrgID, f.ws1.ID, f.ownerMember.User.ID)
		removed <- err
	}}
	svc := tenancy.New(racing, authz.Policy{Store: racing}, sbx.SystemClock{}, lifecycle.NewMembers(f.mgr, f.store))
	_, _, err := svc.CreateKey(f.ctx, f.ownerMember, tenancy.KeySpec{Name: "org-wide"})
	want(t, "an owner makes an org-wide key", err, "", "")
	if racing.race != nil {
		t.Fatal("the owner's role was not read again in the transaction that made the key")
	}
	if racing.removed {
		t.Error("the owner was removed between the check of its role and the key's write")
	}
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.CreateKey(f.ctx, f.ownerMember, tenancy.KeySpec{Name: "again"})
	want(t, "a removed owner", err, sbx.EForbidden, "no longer in any workspace")
}
