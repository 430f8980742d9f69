package observability_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/internal/testorg"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/observability"
	"github.com/sbxdev/sbx/providertest"
)

var t0 = testorg.T0

type clock = testorg.Clock

// sandboxes is a real lifecycle manager over the Memory provider, with the
// host's disk and the default provider's health set by the test.
type sandboxes struct {
	*lifecycle.Manager
	disk    *sbx.Disk
	diskErr error
	down    bool
}

func (s *sandboxes) Disk(ctx context.Context) (sbx.Disk, bool, error) {
	if s.diskErr != nil {
		return sbx.Disk{}, false, s.diskErr
	}
	if s.disk == nil {
		return sbx.Disk{}, false, nil
	}
	return *s.disk, true, nil
}

func (s *sandboxes) Providers(ctx context.Context) []lifecycle.ProviderStatus {
	ps := s.Manager.Providers(ctx)
	for i := range ps {
		if s.down && ps[i].Default {
			ps[i].Available, ps[i].Detail = false, "runsc is missing"
		}
	}
	return ps
}

// org is an org on a real SQLite ledger: workspaces main (its project
// default and a project web) and lab (its project default), a caller of
// every kind, and the summary over it.
type org struct {
	store                       *ledger.Store
	sbs                         *sandboxes
	svc                         observability.Service
	made                        sbx.CreatedOrg
	web, lab                    sbx.Project
	owner, member, labber, proj sbx.Caller
}

func newOrg(t *testing.T) *org {
	t.Helper()
	ctx := context.Background()
	base := testorg.New(t, 5_000_000)
	store := base.Store
	o := &org{store: store, made: base.Made, owner: base.Owner}
	var err error
	if o.web, _, err = store.CreateProject(ctx, o.made.Org.ID, o.made.Workspace.ID, "web", t0); err != nil {
		t.Fatal(err)
	}
	if _, o.lab, err = store.CreateWorkspace(ctx, o.made.Org.ID, "lab", "", "", t0); err != nil {
		t.Fatal(err)
	}
	o.proj = base.Key(sbx.APIKey{ProjectID: o.web.ID})
	o.member = base.Member(o.made.Workspace.ID, "ada@example.com", sbx.RoleMember)
	o.labber = base.Member(o.lab.WorkspaceID, "bob@example.com", sbx.RoleMember)
	mgr := lifecycle.New(store, []sbx.Provider{providertest.NewMemory(providertest.MemoryOptions{})},
		lifecycle.Config{DefaultProvider: providertest.MemoryName, MaxTimeout: 2 * time.Hour}, clock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	o.sbs = &sandboxes{Manager: mgr}
	o.svc = observability.Service{Store: store, Sandboxes: o.sbs, Policy: authz.Policy{Store: store},
		Host: observability.Host{CPUs: 2, MemoryMB: 4096}, Clock: clock{},
		Limits: observability.Limits{MaxTimeout: 2 * time.Hour, MaxCPU: 16, MaxMemoryMB: 65536, MaxDiskMB: 20 << 10, DefaultDiskMB: 10 << 10}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return o
}

// add inserts a sandbox of project p in state st, made at the given time.
func (o *org) add(t *testing.T, p sbx.Project, st sbx.State, at time.Time, milliCPU, memoryMB int64) sbx.Sandbox {
	t.Helper()
	sb := sbx.Sandbox{
		ID: uuid.NewString(), OrgID: o.made.Org.ID, WorkspaceID: p.WorkspaceID, ProjectID: p.ID, Provider: providertest.MemoryName,
		ProviderSandboxID: "i" + uuid.NewString()[:8], Kind: sbx.KindTask, TemplateID: "base", State: st,
		CreatedAt: at, UpdatedAt: at, StartedAt: at, LastSettledAt: at, Timeout: time.Hour, ExpiresAt: t0.Add(time.Hour),
		Resources: sbx.Resources{MilliCPU: milliCPU, MemoryMB: memoryMB, DiskMB: 1024}, AccessToken: "tok",
	}
	if st == sbx.StateFailed {
		sb.EndedAt = at
	}
	if err := o.store.InsertSandbox(context.Background(), sb); err != nil {
		t.Fatal(err)
	}
	return sb
}

func quotas(s observability.Summary) map[string]observability.Quota {
	out := map[string]observability.Quota{}
	for _, q := range s.Quotas {
		out[q.Name] = q
	}
	return out
}

func names(s observability.Summary) []string {
	var out []string
	for _, q := range s.Quotas {
		out = append(out, q.Name)
	}
	return out
}

func projects(s observability.Summary) string {
	var out []string
	for _, p := range s.Projects {
		out = append(out, p.Project.Name)
	}
	return strings.Join(out, ",")
}

// An org with nothing running: every quota it has, in order, all within
// their limits, and the one next action that says all is clear.
func TestSummaryAllClear(t *testing.T) {
	o := newOrg(t)
	s, err := o.svc.Summary(context.Background(), o.owner)
	if err != nil {
		t.Fatal(err)
	}
	want := "credits,host_vcpu,host_memory_mb,max_timeout_seconds,max_cpu_per_sandbox,max_memory_mb_per_sandbox,max_disk_mb_per_sandbox"
	if got := strings.Join(names(s), ","); got != want {
		t.Errorf("quotas %s, want %s (no plan limits: none of plan_*)", got, want)
	}
	for _, q := range s.Quotas {
		if !q.OK {
			t.Errorf("quota %+v is not OK", q)
		}
	}
	q := quotas(s)
	if q["credits"].Limit != 5 || q["host_vcpu"].Limit != 2 || q["max_timeout_seconds"].Limit != 7200 || q["max_cpu_per_sandbox"].Limit != 16 {
		t.Errorf("quotas %+v", s.Quotas)
	}
	if !s.GeneratedAt.Equal(t0) || s.Org.ID != o.made.Org.ID || !s.CreatesAccepted || s.Disk != nil || len(s.Providers) != 1 {
		t.Errorf("summary %+v", s)
	}
	if len(s.NextActions) != 1 || !strings.HasPrefix(s.NextActions[0], "All clear.") {
		t.Errorf("next actions %q", s.NextActions)
	}
	if got := projects(s); got != "default,default,web" {
		t.Errorf("projects %s: want every project of the org, by name", got)
	}
}

// Use against the plan and the host, each compared like with like, and
// the next actions in order: the provider, the disk, every quota passed,
// failed sandboxes, paused ones.
func TestSummaryQuotasAndNextActions(t *testing.T) {
	o := newOrg(t)
	ctx := context.Background()
	o.add(t, o.web, sbx.StateRunning, t0.Add(-time.Hour), 2000, 2048)
	o.add(t, o.made.Project, sbx.StateRunning, t0.Add(-time.Hour), 1000, 1024)
	o.add(t, o.lab, sbx.StatePaused, t0.Add(-time.Hour), 1000, 512)
	failed := o.add(t, o.web, sbx.StateFailed, t0.Add(-time.Hour), 1000, 512)
	o.add(t, o.web, sbx.StateFailed, t0.Add(-48*time.Hour), 1000, 512) // not recent
	if _, err := o.store.SetPlan(ctx, o.made.Org.ID, sbx.Plan{Name: "small", MaxSandboxes: 1, MaxMilliCPU: 8000, MaxMembers: 5}); err != nil {
		t.Fatal(err)
	}
	o.sbs.down = true
	o.sbs.disk = &sbx.Disk{Total: 100 << 30, Free: 12 << 30, Committed: 3 << 30, Reserve: 2 << 30}

	s, err := o.svc.Summary(ctx, o.owner)
	if err != nil {
		t.Fatal(err)
	}
	want := "plan_sandboxes,plan_vcpu,plan_members_per_workspace,credits,host_vcpu,host_memory_mb,host_disk_mb," +
		"max_timeout_seconds,max_cpu_per_sandbox,max_memory_mb_per_sandbox,max_disk_mb_per_sandbox"
	if got := strings.Join(names(s), ","); got != want {
		t.Errorf("quotas %s, want %s", got, want)
	}
	q := quotas(s)
	for name, want := range map[string]observability.Quota{
		"plan_sandboxes":             {Limit: 1, Used: 2},
		"plan_vcpu":                  {Limit: 8, Used: 3, OK: true},
		"plan_members_per_workspace": {Limit: 5, Used: 1, OK: true},
		"host_vcpu":                  {Limit: 2, Used: 3},
		"host_memory_mb":             {Limit: 4096, Used: 3072, OK: true},
		"host_disk_mb":               {Limit: 10 << 10, Used: 3 << 10, OK: true},
	} {
		if got := q[name]; got.Limit != want.Limit || got.Used != want.Used || got.OK != want.OK {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	if !strings.HasSuffix(q["plan_sandboxes"].Detail, "(plan small)") {
		t.Errorf("plan_sandboxes names its plan: %q", q["plan_sandboxes"].Detail)
	}
	if d := s.Disk; d == nil || *d != (observability.Disk{TotalMB: 100 << 10, FreeMB: 12 << 10, ReservedBySandboxes: 3 << 10, ReserveMB: 2 << 10, AvailableMB: 7 << 10}) {
		t.Errorf("disk %+v", s.Disk)
	}
	if s.CreatesAccepted {
		t.Error("creates accepted while the default provider is down")
	}
	if s.Total.Sandboxes != 5 || s.Total.ByState[sbx.StatePaused] != 1 {
		t.Errorf("total %+v", s.Total)
	}
	wantActions := []string{
		`No sandbox can start: the default provider "memory" is not available (runsc is missing).`,
		"This host's disk has room for a sandbox of at most 7168 MB (diskMB; the default is 10240)",
		"Over quota plan_sandboxes: the org's sandboxes starting or running (plan small) (2 of 1).",
		"Over quota host_vcpu: vCPU asked for",
		"1 sandbox(es) failed in the last 24 hours; read why with `sbx sandbox get " + failed.ProviderSandboxID + "`",
		"1 paused sandbox(es) keep their state",
	}
	if len(s.NextActions) != len(wantActions) {
		t.Fatalf("next actions %q, want %d", s.NextActions, len(wantActions))
	}
	for i, w := range wantActions {
		if !strings.HasPrefix(s.NextActions[i], w) {
			t.Errorf("next action %d: %q, want it to start %q", i, s.NextActions[i], w)
		}
	}

	// A disk that cannot be measured is an action, not an error.
	o.sbs.down, o.sbs.disk, o.sbs.diskErr = false, nil, sbx.Errorf(sbx.EProvider, "statfs failed")
	if s, err = o.svc.Summary(ctx, o.owner); err != nil {
		t.Fatal(err)
	}
	if s.Disk != nil || !strings.HasPrefix(s.NextActions[0], "The disk of this host could not be measured: statfs failed") {
		t.Errorf("disk %+v, actions %q", s.Disk, s.NextActions)
	}
	if _, found := quotas(s)["host_disk_mb"]; found {
		t.Error("host_disk_mb without a measured disk")
	}
}

// Usage shows only what the caller reaches: a member's key the projects of
// its user's workspaces, a project's key its project; the plan's quotas
// are the org's for every caller.
func TestSummaryShowsWhatTheCallerReaches(t *testing.T) {
	o := newOrg(t)
	ctx := context.Background()
	o.add(t, o.web, sbx.StateRunning, t0.Add(-time.Hour), 1000, 512)
	o.add(t, o.lab, sbx.StatePaused, t0.Add(-time.Hour), 1000, 512)
	o.add(t, o.lab, sbx.StateFailed, t0.Add(-time.Hour), 1000, 512)
	for _, c := range []struct {
		who      string
		caller   sbx.Caller
		projects string
		total    int
		actions  string
	}{
		{"owner", o.owner, "default,default,web", 3, "failed paused"},
		{"main's member", o.member, "default,web", 1, ""},
		{"lab's member", o.labber, "default", 2, "failed paused"},
		{"web's key", o.proj, "web", 1, ""},
	} {
		s, err := o.svc.Summary(ctx, c.caller)
		if err != nil {
			t.Fatalf("%s: %v", c.who, err)
		}
		if got := projects(s); got != c.projects || s.Total.Sandboxes != c.total {
			t.Errorf("%s sees projects %s and %d sandboxes, want %s and %d", c.who, got, s.Total.Sandboxes, c.projects, c.total)
		}
		var actions []string
		for _, a := range s.NextActions {
			switch {
			case strings.Contains(a, "failed in the last 24 hours"):
				actions = append(actions, "failed")
			case strings.Contains(a, "paused sandbox(es)"):
				actions = append(actions, "paused")
			}
		}
		if got := strings.Join(actions, " "); got != c.actions {
			t.Errorf("%s's next actions %q, want %s", c.who, s.NextActions, c.actions)
		}
		if q := quotas(s)["credits"]; q.Limit != 5 {
			t.Errorf("%s's credits quota %+v", c.who, q)
		}
	}
	projects, total, err := o.svc.Usage(ctx, o.labber)
	if err != nil || len(projects) != 1 || projects[0].Project.ID != o.lab.ID || projects[0].Usage.Sandboxes != 2 || total.Sandboxes != 2 {
		t.Errorf("lab's member's usage %+v %+v %v", projects, total, err)
	}
}
