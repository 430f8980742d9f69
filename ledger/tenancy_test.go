package ledger_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

func wantCode(t *testing.T, err error, code sbx.Code, contains string) {
	t.Helper()
	if sbx.ErrorCode(err) != code || !strings.Contains(sbx.ErrorMessage(err), contains) {
		t.Fatalf("got %v (code %s), want code %s containing %q", err, sbx.ErrorCode(err), code, contains)
	}
}

func TestOrgsWorkspacesProjects(t *testing.T) { dialects(t, orgsWorkspacesProjects) }

func orgsWorkspacesProjects(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	plan := sbx.Plan{Name: "team", MaxSandboxes: 3, MaxMilliCPU: 4000, MaxMemoryMB: 8192, MaxGPUPercent: 150, MaxMembers: 5, MaxTimeout: time.Hour}
	made, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme", KYCStatus: sbx.KYCPending, Plan: plan, Key: sbx.APIKey{Name: "owner"}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if made.Secret == "" || made.Key.OrgID != made.Org.ID || made.Key.Scope() != "org" || made.Project.WorkspaceID != made.Workspace.ID {
		t.Fatalf("created %+v", made)
	}
	for _, ref := range []string{made.Org.ID, "acme"} {
		got, err := s.GetOrg(ctx, ref)
		if err != nil || got.Plan != plan || got.KYCStatus != sbx.KYCPending || !got.CreatedAt.Equal(t0) {
			t.Fatalf("GetOrg(%s) = %+v, %v", ref, got, err)
		}
	}
	c, err := s.Authenticate(ctx, made.Secret)
	if err != nil || c.Role != sbx.RoleOwner || c.Org.Plan != plan || c.Project.ID != made.Project.ID {
		t.Fatalf("the new org's key: %+v, %v", c, err)
	}
	_, err = s.GetOrg(ctx, "nope")
	wantCode(t, err, sbx.ENotFound, "org nope not found")
	_, err = s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme"}, t0)
	wantCode(t, err, sbx.EConflict, `org "acme" already exists`)
	for _, bad := range []string{"", "Acme", "a b", uuid.NewString(), strings.Repeat("a", 64)} {
		_, err = s.CreateOrgWith(ctx, ledger.NewOrg{Name: bad}, t0)
		wantCode(t, err, sbx.EInvalid, "org name")
	}
	_, err = s.CreateOrgWith(ctx, ledger.NewOrg{Name: "neg", Plan: sbx.Plan{MaxMemoryMB: -1}}, t0)
	wantCode(t, err, sbx.EInvalid, "max_memory_mb must be 0 (no limit) or more")

	// The plain CreateOrg: unverified, no limits, a runtime for its project.
	other, ows, op, err := s.CreateOrg(ctx, "other", t0.Add(time.Second))
	if err != nil || other.KYCStatus != sbx.KYCUnverified || other.Plan != (sbx.Plan{}) {
		t.Fatalf("CreateOrg: %+v, %v", other, err)
	}
	for _, p := range []sbx.Project{made.Project, op} {
		rt, err := s.Runtime(ctx, p.ID)
		if err != nil || rt.Status != sbx.RuntimeIdle || rt.SandboxID != "" || rt.ProjectID != p.ID || rt.WorkspaceID != p.WorkspaceID || rt.OrgID != p.OrgID {
			t.Fatalf("runtime of project %s: %+v, %v", p.Name, rt, err)
		}
	}

	ws, wp, err := s.CreateWorkspace(ctx, made.Org.ID, "research", "", "", t0.Add(time.Minute))
	if err != nil || wp.Name != "default" || wp.WorkspaceID != ws.ID {
		t.Fatalf("CreateWorkspace: %+v %+v %v", ws, wp, err)
	}
	_, _, err = s.CreateWorkspace(ctx, made.Org.ID, "research", "", "", t0)
	wantCode(t, err, sbx.EConflict, `workspace "research" already exists`)
	if _, _, err := s.CreateWorkspace(ctx, other.ID, "research", "", "", t0); err != nil {
		t.Fatalf("the same workspace name in another org: %v", err)
	}
	p, rt, err := s.CreateProject(ctx, made.Org.ID, "research", "evals", t0.Add(2*time.Minute))
	if err != nil || p.WorkspaceID != ws.ID || rt.ProjectID != p.ID || rt.Status != sbx.RuntimeIdle {
		t.Fatalf("CreateProject: %+v %+v %v", p, rt, err)
	}
	if got, err := s.Runtime(ctx, p.ID); err != nil || got.ID != rt.ID {
		t.Fatalf("Runtime: %+v %v", got, err)
	}
	_, _, err = s.CreateProject(ctx, made.Org.ID, ws.ID, "evals", t0)
	wantCode(t, err, sbx.EConflict, `project "evals" already exists in workspace research`)
	_, _, err = s.CreateProject(ctx, made.Org.ID, ows.ID, "evals", t0)
	wantCode(t, err, sbx.ENotFound, "workspace "+ows.ID+" not found")
	if _, err := s.GetWorkspace(ctx, other.ID, ws.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("another org's workspace: %v", err)
	}

	// Pages, oldest first.
	for i := range 3 {
		if _, _, err := s.CreateProject(ctx, made.Org.ID, ws.ID, fmt.Sprintf("p%d", i), t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	cursor := ""
	for {
		page, next, err := s.WorkspaceProjects(ctx, made.Org.ID, ws.ID, sbx.Reach{}, ledger.Page{Limit: 2, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			names = append(names, p.Name)
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	if got := strings.Join(names[:2], ","); len(names) != 5 || got != "default,evals" {
		t.Fatalf("projects of research by page: %v", names)
	}
	list, next, err := s.Workspaces(ctx, made.Org.ID, sbx.Reach{}, ledger.Page{})
	if err != nil || next != "" || len(list) != 2 || list[0].Name != "default" || list[1].Name != "research" {
		t.Fatalf("workspaces: %+v %q %v", list, next, err)
	}
	orgs, next, err := s.Orgs(ctx, ledger.Page{Limit: 1})
	if err != nil || len(orgs) != 1 || orgs[0].Name != "acme" || next == "" {
		t.Fatalf("first page of orgs: %+v %q %v", orgs, next, err)
	}
	orgs, next, err = s.Orgs(ctx, ledger.Page{Limit: 1, Cursor: next})
	if err != nil || len(orgs) != 1 || orgs[0].Name != "other" {
		t.Fatalf("second page of orgs: %+v %q %v", orgs, next, err)
	}
	_, _, err = s.Orgs(ctx, ledger.Page{Cursor: "bad!"})
	wantCode(t, err, sbx.EInvalid, "cursor")
}

func TestMembersAndRoles(t *testing.T) { dialects(t, membersAndRoles) }

func membersAndRoles(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	made, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme", Plan: sbx.Plan{MaxMembers: 2}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	org, ws := made.Org, made.Workspace
	research, _, _ := s.CreateWorkspace(ctx, org.ID, "research", "", "", t0)
	other, ows, _, _ := s.CreateOrg(ctx, "other", t0)

	m, count, err := s.AddMember(ctx, org.ID, "default", "Ada@Example.com", "Ada", sbx.RoleAdmin, t0)
	if err != nil || m.User.Email != "ada@example.com" || m.User.KYCStatus != sbx.KYCUnverified || m.Role != sbx.RoleAdmin || m.WorkspaceID != ws.ID {
		t.Fatalf("AddMember: %+v %v", m, err)
	}
	if count != (ledger.MemberCount{Members: 1, Max: 2}) || count.Over() {
		t.Fatalf("count %+v", count)
	}
	_, _, err = s.AddMember(ctx, org.ID, ws.ID, "ada@example.com", "", sbx.RoleMember, t0)
	wantCode(t, err, sbx.EConflict, "ada@example.com is already a member of workspace default")
	_, _, err = s.AddMember(ctx, org.ID, ws.ID, "not an address", "", sbx.RoleMember, t0)
	wantCode(t, err, sbx.EInvalid, "is not an address")
	_, _, err = s.AddMember(ctx, org.ID, ws.ID, "bob@example.com", "", "boss", t0)
	wantCode(t, err, sbx.EInvalid, `role "boss"`)
	_, _, err = s.AddMember(ctx, org.ID, ows.ID, "bob@example.com", "", sbx.RoleMember, t0)
	wantCode(t, err, sbx.ENotFound, "workspace")

	// The same person in another org is the same user.
	om, _, err := s.AddMember(ctx, other.ID, ows.ID, "ada@example.com", "Someone else", sbx.RoleOwner, t0)
	if err != nil || om.User.ID != m.User.ID || om.User.Name != "Ada" {
		t.Fatalf("a member of two orgs: %+v %v", om, err)
	}
	s.AddMember(ctx, org.ID, ws.ID, "bob@example.com", "Bob", sbx.RoleMember, t0.Add(time.Second))
	_, count, err = s.AddMember(ctx, org.ID, ws.ID, "cy@example.com", "", sbx.RoleMember, t0.Add(2*time.Second))
	if err != nil || count != (ledger.MemberCount{Members: 3, Max: 2}) || !count.Over() {
		t.Fatalf("a member beyond the limit is added, over: %+v %v", count, err)
	}
	s.AddMember(ctx, org.ID, research.ID, "bob@example.com", "", sbx.RoleOwner, t0)

	members, next, err := s.Members(ctx, org.ID, ws.ID, ledger.Page{Limit: 2})
	if err != nil || len(members) != 2 || members[0].User.Email != "ada@example.com" || members[1].User.Email != "bob@example.com" || next == "" {
		t.Fatalf("members: %+v %q %v", members, next, err)
	}
	members, _, _ = s.Members(ctx, org.ID, ws.ID, ledger.Page{Cursor: next})
	if len(members) != 1 || members[0].User.Email != "cy@example.com" {
		t.Fatalf("second page of members: %+v", members)
	}
	counts, err := s.MemberCounts(ctx, org.ID)
	if err != nil || counts[ws.ID].Members != 3 || counts[research.ID].Members != 1 || counts[ws.ID].Max != 2 {
		t.Fatalf("member counts: %+v %v", counts, err)
	}
	bob, _ := s.GetUser(ctx, "bob@example.com")
	for ws, want := range map[string]sbx.Role{ws.ID: sbx.RoleMember, research.ID: sbx.RoleOwner, ows.ID: ""} {
		if got, err := s.MemberRole(ctx, ws, bob.ID); err != nil || got != want {
			t.Errorf("role of bob in %s: %q %v, want %q", ws, got, err, want)
		}
	}
	if role, err := s.OrgRole(ctx, org.ID, bob.ID); err != nil || role != sbx.RoleOwner {
		t.Fatalf("bob's highest role: %q %v", role, err)
	}

	got, err := s.GetMember(ctx, org.ID, "default", "BOB@example.com")
	if err != nil || got.User.ID != bob.ID || got.Role != sbx.RoleMember {
		t.Fatalf("GetMember: %+v %v", got, err)
	}
	removed, count, err := s.RemoveMember(ctx, org.ID, ws.ID, bob.ID)
	if err != nil || removed.User.ID != bob.ID || count != (ledger.MemberCount{Members: 2, Max: 2}) || count.Over() {
		t.Fatalf("RemoveMember: %+v %+v %v", removed, count, err)
	}
	_, _, err = s.RemoveMember(ctx, org.ID, ws.ID, "bob@example.com")
	wantCode(t, err, sbx.ENotFound, "bob@example.com is not a member of workspace default")
	_, _, err = s.RemoveMember(ctx, other.ID, ws.ID, "ada@example.com")
	wantCode(t, err, sbx.ENotFound, "workspace")
}

func TestKeysOfMembersAndProjects(t *testing.T) { dialects(t, keysOfMembersAndProjects) }

func keysOfMembersAndProjects(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	research, rp, _ := s.CreateWorkspace(ctx, org.ID, "research", "", "", t0.Add(time.Second))
	other, _, _, _ := s.CreateOrg(ctx, "other", t0)
	// Ada joined research first, default later: her key acts in research.
	ada, _, _ := s.AddMember(ctx, org.ID, research.ID, "ada@example.com", "Ada", sbx.RoleMember, t0)
	s.AddMember(ctx, org.ID, ws.ID, "ada@example.com", "", sbx.RoleAdmin, t0.Add(time.Second))
	stranger, _, _ := s.AddMember(ctx, other.ID, "default", "eve@example.com", "", sbx.RoleOwner, t0)

	_, _, err := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, UserID: stranger.User.ID, Name: "x"}, t0)
	wantCode(t, err, sbx.ENotFound, "is not a member of org")
	_, _, err = s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, UserID: ada.User.ID, ProjectID: p.ID, Name: "x"}, t0)
	wantCode(t, err, sbx.EInvalid, "a project's or a member's, not both")

	mk, msecret, err := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, UserID: ada.User.ID, Name: "ada's laptop"}, t0)
	if err != nil || mk.Scope() != "member" {
		t.Fatal(err)
	}
	c, err := s.Authenticate(ctx, msecret)
	if err != nil || c.Role != sbx.RoleAdmin || c.User.ID != ada.User.ID || c.User.Email != "ada@example.com" ||
		c.Workspace.ID != research.ID || c.Project.ID != rp.ID || !c.OrgWide() || c.Key.UserID != ada.User.ID {
		t.Fatalf("member caller: %+v %v", c, err)
	}
	_, psecret, _ := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, ProjectID: p.ID, Name: "ci"}, t0.Add(time.Second))
	if c, err := s.Authenticate(ctx, psecret); err != nil || c.Role != sbx.RoleMember || c.OrgWide() || c.User.ID != "" {
		t.Fatalf("project caller: %+v %v", c, err)
	}
	ok, osecret, _ := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, Name: "admin"}, t0.Add(2*time.Second))
	if c, err := s.Authenticate(ctx, osecret); err != nil || c.Role != sbx.RoleOwner || c.Project.ID != p.ID {
		t.Fatalf("org caller: %+v %v", c, err)
	}

	keys, next, err := s.APIKeys(ctx, org.ID, ledger.Page{Limit: 2})
	if err != nil || len(keys) != 2 || keys[0].ID != mk.ID || keys[0].UserID != ada.User.ID || keys[1].ProjectID != p.ID || next == "" {
		t.Fatalf("keys: %+v %q %v", keys, next, err)
	}
	if _, err := s.GetAPIKey(ctx, other.ID, ok.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("another org's key: %v", err)
	}
	revoked, err := s.RevokeAPIKey(ctx, org.ID, ok.ID, t0.Add(time.Hour))
	if err != nil || !revoked.RevokedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("revoke: %+v %v", revoked, err)
	}
	_, err = s.Authenticate(ctx, osecret)
	wantCode(t, err, sbx.EUnauthorized, "not valid")
	_, err = s.RevokeAPIKey(ctx, org.ID, ok.ID, t0)
	wantCode(t, err, sbx.EConflict, "already revoked")
	if got, _ := s.GetAPIKey(ctx, org.ID, ok.ID); got.RevokedAt.IsZero() {
		t.Fatal("a revoked key is not listed as revoked")
	}

	// A member's key works while its user is a member of some workspace of the org.
	s.RemoveMember(ctx, org.ID, research.ID, ada.User.ID)
	if c, err := s.Authenticate(ctx, msecret); err != nil || c.Workspace.ID != ws.ID {
		t.Fatalf("after leaving research: %+v %v", c, err)
	}
	s.RemoveMember(ctx, org.ID, ws.ID, ada.User.ID)
	_, err = s.Authenticate(ctx, msecret)
	wantCode(t, err, sbx.EUnauthorized, "no longer a member of org acme")
}

func TestVerification(t *testing.T) { dialects(t, verification) }

func verification(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, _, _, _ := s.CreateOrg(ctx, "acme", t0)
	m, _, _ := s.AddMember(ctx, org.ID, "default", "ada@example.com", "", sbx.RoleMember, t0)
	_, secret, _ := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, UserID: m.User.ID, Name: "ada"}, t0)
	c, _ := s.Authenticate(ctx, secret)
	if c.Verified() || c.Org.KYCStatus != sbx.KYCUnverified {
		t.Fatalf("a new org and user are verified: %+v", c)
	}

	o, applied, err := s.SetOrgKYC(ctx, "acme", sbx.KYCPending, t0.Add(time.Minute), true)
	if err != nil || !applied || o.KYCStatus != sbx.KYCPending {
		t.Fatalf("SetOrgKYC: %+v %v %v", o, applied, err)
	}
	// A report of a state decided before the one recorded (a late webhook)
	// is not applied; the operator's word is, whenever it was decided.
	o, applied, err = s.SetOrgKYC(ctx, org.ID, sbx.KYCUnverified, t0, true)
	if err != nil || applied || o.KYCStatus != sbx.KYCPending {
		t.Fatalf("an older state: %+v %v %v", o, applied, err)
	}
	o, applied, err = s.SetOrgKYC(ctx, org.ID, sbx.KYCUnverified, t0, false)
	if err != nil || !applied || o.KYCStatus != sbx.KYCUnverified {
		t.Fatalf("the operator's word: %+v %v %v", o, applied, err)
	}
	if got, _ := s.GetOrg(ctx, org.ID); got.KYCStatus != sbx.KYCUnverified {
		t.Fatalf("recorded %s", got.KYCStatus)
	}
	_, _, err = s.SetOrgKYC(ctx, org.ID, "done", t0, false)
	wantCode(t, err, sbx.EInvalid, `status "done"`)
	_, _, err = s.SetOrgKYC(ctx, "nope", sbx.KYCVerified, t0, false)
	wantCode(t, err, sbx.ENotFound, "org nope")

	u, applied, err := s.SetUserKYC(ctx, "ada@example.com", sbx.KYCVerified, t0.Add(time.Minute), true)
	if err != nil || !applied || u.KYCStatus != sbx.KYCVerified {
		t.Fatalf("SetUserKYC: %+v %v %v", u, applied, err)
	}
	if c, _ := s.Authenticate(ctx, secret); !c.Verified() || c.User.KYCStatus != sbx.KYCVerified {
		t.Fatalf("a verified user's caller: %+v", c)
	}
	if _, applied, _ := s.SetUserKYC(ctx, m.User.ID, sbx.KYCPending, t0, true); applied {
		t.Fatal("a late report about a user was applied")
	}
	s.SetUserKYC(ctx, m.User.ID, sbx.KYCUnverified, t0.Add(2*time.Minute), false)
	s.SetOrgKYC(ctx, org.ID, sbx.KYCVerified, t0.Add(2*time.Minute), false)
	if c, _ := s.Authenticate(ctx, secret); !c.Verified() || c.User.KYCStatus != sbx.KYCUnverified {
		t.Fatalf("a verified org's caller: %+v", c)
	}
	_, _, err = s.SetUserKYC(ctx, "nobody@example.com", sbx.KYCVerified, t0, false)
	wantCode(t, err, sbx.ENotFound, "user nobody@example.com not found")
}

// starting is a sandbox of org's default workspace and project asking for
// compute, as a create inserts it.
func starting(c ledger.CreatedOrg, milliCPU, memoryMB int64, gpu *sbx.GPURequest) sbx.Sandbox {
	sb := newSandbox(c.Org, c.Workspace, c.Project, t0)
	sb.State, sb.Intent, sb.StartedAt, sb.ExpiresAt = sbx.StateStarting, sbx.IntentCreating, time.Time{}, time.Time{}
	sb.Resources = sbx.Resources{MilliCPU: milliCPU, MemoryMB: memoryMB, GPU: gpu}
	return sb
}

func TestPlanAdmission(t *testing.T) { dialects(t, planAdmission) }

func planAdmission(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	c, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme", Plan: sbx.Plan{MaxSandboxes: 2}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "other"}, t0)
	a, b := starting(c, 1000, 512, nil), starting(c, 1000, 512, nil)
	for _, sb := range []sbx.Sandbox{a, b, starting(other, 1000, 512, nil), starting(other, 1000, 512, nil), starting(other, 1000, 512, nil)} {
		if err := s.InsertSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	third := starting(c, 1000, 512, nil)
	err = s.InsertSandbox(ctx, third)
	wantCode(t, err, sbx.EPlanLimit, "plan limit: at most 2 concurrent sandboxes (2 running or starting); stop or pause a sandbox, or ask the operator for a larger plan")
	if _, err := s.GetSandbox(ctx, "", third.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("a refused sandbox was written: %v", err)
	}
	// Paused and ended sandboxes hold nothing; rows recorded as paused are
	// not admitted, since they take no compute.
	paused := starting(c, 1000, 512, nil)
	paused.State, paused.Intent = sbx.StatePaused, sbx.IntentNone
	if err := s.InsertSandbox(ctx, paused); err != nil {
		t.Fatalf("a paused row: %v", err)
	}
	if _, err := s.UpdateSandbox(ctx, a.ID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.State, sb.Intent = sbx.StateKilled, sbx.IntentNone
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if use, err := s.PlanUse(ctx, c.Org.ID); err != nil || use != (ledger.PlanUse{Sandboxes: 1, MilliCPU: 1000, MemoryMB: 512}) {
		t.Fatalf("use: %+v %v", use, err)
	}
	// A resume asks again: the resuming intent is admitted like a create.
	resume := func(id string) error {
		_, err := s.UpdateSandbox(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
			sb.Intent = sbx.IntentResuming
			return []sbx.Event{{At: t0, Step: "resuming"}}, nil
		})
		return err
	}
	if err := resume(paused.ID); err != nil {
		t.Fatalf("a resume within the plan: %v", err)
	}
	err = s.InsertSandbox(ctx, starting(c, 1000, 512, nil))
	wantCode(t, err, sbx.EPlanLimit, "(2 running or starting)")
	// The settle of that resume is not an admission: it clears the intent.
	if _, err := s.UpdateSandbox(ctx, paused.ID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.State, sb.Intent = sbx.StateRunning, sbx.IntentNone
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}

	// Each limit, with what is in use and what the plan allows.
	for _, lc := range []struct {
		plan   sbx.Plan
		ask    sbx.Sandbox
		detail string
	}{
		{sbx.Plan{MaxMilliCPU: 3000}, starting(c, 1500, 64, nil), "plan limit: at most 3 vCPU across running sandboxes (2 in use, this one asks for 1.5)"},
		{sbx.Plan{MaxMemoryMB: 1500}, starting(c, 10, 512, nil), "plan limit: at most 1500 MB of memory across running sandboxes (1024 MB in use, this one asks for 512 MB)"},
		{sbx.Plan{MaxGPUPercent: 100}, starting(c, 10, 64, &sbx.GPURequest{Type: "h100", Count: 2, Fraction: 100}), "plan limit: at most 100% of a GPU across running sandboxes (0% in use, this one asks for 200%)"},
	} {
		if _, err := s.SetPlan(ctx, c.Org.ID, lc.plan); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.InsertSandbox(ctx, lc.ask), sbx.EPlanLimit, lc.detail)
	}
	if _, err := s.SetPlan(ctx, "acme", sbx.Plan{MaxMilliCPU: 3000, MaxMemoryMB: 1536, MaxGPUPercent: 100}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertSandbox(ctx, starting(c, 1000, 512, &sbx.GPURequest{Type: "h100", Count: 1, Fraction: 100})); err != nil {
		t.Fatalf("exactly up to every limit: %v", err)
	}
	if use, _ := s.PlanUse(ctx, c.Org.ID); use != (ledger.PlanUse{Sandboxes: 3, MilliCPU: 3000, MemoryMB: 1536, GPUPercent: 100}) {
		t.Fatalf("use at the limits: %+v", use)
	}

	// Over the member limit, nothing in the workspace is admitted; other
	// workspaces of the org are.
	s.SetPlan(ctx, c.Org.ID, sbx.Plan{MaxMembers: 1})
	s.AddMember(ctx, c.Org.ID, c.Workspace.ID, "ada@example.com", "", sbx.RoleMember, t0)
	_, count, _ := s.AddMember(ctx, c.Org.ID, c.Workspace.ID, "bob@example.com", "", sbx.RoleMember, t0)
	if !count.Over() {
		t.Fatalf("count %+v", count)
	}
	wantCode(t, s.InsertSandbox(ctx, starting(c, 1, 64, nil)), sbx.EPlanLimit,
		"plan limit: workspace default has 2 members, more than the 1 per workspace the plan allows")
	research, rp, _ := s.CreateWorkspace(ctx, c.Org.ID, "research", "", "", t0)
	elsewhere := starting(c, 1, 64, nil)
	elsewhere.WorkspaceID, elsewhere.ProjectID = research.ID, rp.ID
	if err := s.InsertSandbox(ctx, elsewhere); err != nil {
		t.Fatalf("another workspace: %v", err)
	}
	if _, err := s.UpdateSandbox(ctx, paused.ID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.State, sb.PauseReason = sbx.StatePaused, sbx.PauseMemberLimitExceeded
		return nil, nil
	}); err != nil {
		t.Fatalf("a pause is never refused: %v", err)
	}
	wantCode(t, resume(paused.ID), sbx.EPlanLimit, "workspace default has 2 members")
	s.RemoveMember(ctx, c.Org.ID, c.Workspace.ID, "bob@example.com")
	if err := resume(paused.ID); err != nil {
		t.Fatalf("back within the member limit: %v", err)
	}
	in, err := s.SandboxesInWorkspace(ctx, c.Workspace.ID, sbx.StatePaused)
	if err != nil || len(in) != 1 || in[0].ID != paused.ID {
		t.Fatalf("paused sandboxes of the workspace: %+v %v", in, err)
	}
}

// Admission is race-free: of 20 creates at once against a limit of 3, on
// PostgreSQL as on SQLite, exactly 3 are admitted.
func TestPlanAdmissionIsRaceFree(t *testing.T) { dialects(t, planAdmissionIsRaceFree) }

func planAdmissionIsRaceFree(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	c, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme", Plan: sbx.Plan{MaxSandboxes: 3}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	// Half the contenders are paused sandboxes resuming, half new ones.
	var paused []string
	for range 10 {
		sb := starting(c, 100, 64, nil)
		sb.State, sb.Intent = sbx.StatePaused, sbx.IntentNone
		if err := s.InsertSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
		paused = append(paused, sb.ID)
	}
	admitted := contend(t, 20, func(i int) error {
		if i%2 == 0 {
			return s.InsertSandbox(ctx, starting(c, 100, 64, nil))
		}
		_, err := s.UpdateSandbox(ctx, paused[i/2], func(sb *sbx.Sandbox) ([]sbx.Event, error) {
			sb.Intent = sbx.IntentResuming
			return nil, nil
		})
		return err
	})
	use, err := s.PlanUse(ctx, c.Org.ID)
	if admitted != 3 || err != nil || use.Sandboxes != 3 {
		t.Fatalf("%d admitted, %d holding compute (%v); want 3", admitted, use.Sandboxes, err)
	}
}

// contend runs n admissions at once, contender i calling admit(i), and
// answers how many were admitted; a refusal other than a plan limit fails t.
func contend(t *testing.T, n int, admit func(i int) error) int {
	t.Helper()
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			<-start
			errs[i] = admit(i)
		})
	}
	close(start)
	wg.Wait()
	admitted := 0
	for _, err := range errs {
		switch {
		case err == nil:
			admitted++
		case sbx.ErrorCode(err) != sbx.EPlanLimit:
			t.Errorf("unexpected error: %v", err)
		}
	}
	return admitted
}

// Orgs made before migration 0004 stay able to create sandboxes (verified)
// and their projects get runtimes.
func TestTenancyMigrationKeepsExistingOrgs(t *testing.T) { dialects(t, tenancyMigration) }

func tenancyMigration(t *testing.T, dsn string) {
	db := migratedBelow(t, dsn, 4)
	defer db.Close()
	for _, stmt := range []string{
		`INSERT INTO orgs (id, name, created_at) VALUES ('o1', 'old', 1)`,
		`INSERT INTO workspaces (id, org_id, name, created_at) VALUES ('w1', 'o1', 'default', 1)`,
		`INSERT INTO projects (id, org_id, workspace_id, name, created_at) VALUES ('p1', 'o1', 'w1', 'default', 1)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s := open(t, dsn)
	ctx := context.Background()
	org, err := s.GetOrg(ctx, "old")
	if err != nil || org.KYCStatus != sbx.KYCVerified || org.Plan != (sbx.Plan{}) {
		t.Fatalf("an org from before: %+v %v", org, err)
	}
	if rt, err := s.Runtime(ctx, "p1"); err != nil || rt.ID != "p1" || rt.Status != sbx.RuntimeIdle || rt.WorkspaceID != "w1" {
		t.Fatalf("the runtime of a project from before: %+v %v", rt, err)
	}
	if org, _, _, err := s.CreateOrg(ctx, "new", t0); err != nil || org.KYCStatus != sbx.KYCUnverified {
		t.Fatalf("an org made after: %+v %v", org, err)
	}
}

// migratedBelow opens the database at dsn with its dialect's migrations
// applied up to, not including, version below, as a ledger of an older sbx
// left it.
func migratedBelow(t *testing.T, dsn string, below int) *sql.DB {
	t.Helper()
	dialect, driver := "sqlite", "sqlite"
	if ledger.IsPostgres(dsn) {
		dialect, driver = "postgres", "pgx"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("migrations", dialect, "*.sql"))
	sort.Strings(files)
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		var version int
		fmt.Sscanf(filepath.Base(f), "%d_", &version)
		if version >= below {
			break
		}
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(body)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := db.Exec(fmt.Sprintf(`INSERT INTO schema_migrations (version, applied_at) VALUES (%d, 0)`, version)); err != nil {
			t.Fatal(err)
		}
	}
	return db
}
