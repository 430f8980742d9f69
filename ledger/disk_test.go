package ledger_test

import (
	"context"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

// withDisk is a starting sandbox of c with a writable layer of diskMB.
func withDisk(c ledger.CreatedOrg, diskMB int64) sbx.Sandbox {
	sb := starting(c, 100, 64, nil)
	sb.Resources.DiskMB = diskMB
	return sb
}

// The plan's disk limit sums the caps of the sandboxes that hold disk:
// starting, running and paused (hibernated too), not killed or failed. It
// is checked where a sandbox is recorded, and a resume, which holds its disk
// already, is not refused by it.
func TestPlanDiskAdmission(t *testing.T) { dialects(t, planDiskAdmission) }

func planDiskAdmission(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	c, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme", Plan: sbx.Plan{Name: "small", MaxDiskMB: 25000}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := s.GetOrg(ctx, "acme"); o.Plan.MaxDiskMB != 25000 {
		t.Fatalf("plan read back: %+v", o.Plan)
	}
	other, _ := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "other"}, t0)
	running, paused := withDisk(c, 10240), withDisk(c, 10240)
	paused.State, paused.Intent, paused.Hibernated = sbx.StatePaused, sbx.IntentNone, true
	for _, sb := range []sbx.Sandbox{running, paused, withDisk(other, 50000)} {
		if err := s.InsertSandbox(ctx, sb); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.GetSandbox(ctx, "", running.ID); got.Resources.DiskMB != 10240 {
		t.Fatalf("disk read back: %+v", got.Resources)
	}
	third := withDisk(c, 10240)
	wantCode(t, s.InsertSandbox(ctx, third), sbx.EPlanLimit,
		"plan limit: at most 25000 MB of disk across sandboxes not yet killed (20480 MB held by running and paused sandboxes, this one asks for 10240 MB); "+
			"ask for a smaller disk (diskMB), delete a sandbox (a paused one keeps its disk), or ask the operator for a larger plan")
	if _, err := s.GetSandbox(ctx, "", third.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Fatalf("a refused sandbox was written: %v", err)
	}
	// A paused row recorded as such holds disk too, and is admitted for it.
	pausedRow := withDisk(c, 4521)
	pausedRow.State, pausedRow.Intent = sbx.StatePaused, sbx.IntentNone
	wantCode(t, s.InsertSandbox(ctx, pausedRow), sbx.EPlanLimit, "at most 25000 MB of disk")
	if err := s.InsertSandbox(ctx, withDisk(c, 4520)); err != nil {
		t.Fatalf("exactly up to the limit: %v", err)
	}
	if use, err := s.PlanUse(ctx, c.Org.ID); err != nil || use != (ledger.PlanUse{Sandboxes: 2, MilliCPU: 200, MemoryMB: 128, DiskMB: 25000}) {
		t.Fatalf("use: %+v %v", use, err)
	}

	// A resume asks for compute, not disk: a smaller plan does not keep a
	// paused sandbox from running again.
	if _, err := s.SetPlan(ctx, c.Org.ID, sbx.Plan{MaxDiskMB: 1000}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateSandbox(ctx, paused.ID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		sb.Intent = sbx.IntentResuming
		return nil, nil
	}); err != nil {
		t.Fatalf("a resume under a smaller disk limit: %v", err)
	}
	wantCode(t, s.InsertSandbox(ctx, withDisk(c, 1)), sbx.EPlanLimit, "at most 1000 MB of disk")

	// Killed and failed sandboxes hold none.
	if _, err := s.SetPlan(ctx, c.Org.ID, sbx.Plan{MaxDiskMB: 25000}); err != nil {
		t.Fatal(err)
	}
	for id, state := range map[string]sbx.State{running.ID: sbx.StateKilled, paused.ID: sbx.StateFailed} {
		if _, err := s.UpdateSandbox(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
			sb.State, sb.Intent = state, sbx.IntentNone
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if use, _ := s.PlanUse(ctx, c.Org.ID); use.DiskMB != 4520 {
		t.Fatalf("disk held after a kill and a failure: %+v", use)
	}
	if err := s.InsertSandbox(ctx, withDisk(c, 20480)); err != nil {
		t.Fatalf("the disk of ended sandboxes is free again: %v", err)
	}
	if _, err := s.SetPlan(ctx, c.Org.ID, sbx.Plan{MaxDiskMB: -1}); err == nil {
		t.Fatal("a negative disk limit was taken")
	} else {
		wantCode(t, err, sbx.EInvalid, "max_disk_mb must be 0 (no limit) or more")
	}
}

// Disk admission is race-free: of 20 creates at once against room for 3,
// on PostgreSQL as on SQLite, exactly 3 are admitted.
func TestPlanDiskAdmissionIsRaceFree(t *testing.T) { dialects(t, planDiskAdmissionIsRaceFree) }

func planDiskAdmissionIsRaceFree(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	c, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme", Plan: sbx.Plan{MaxDiskMB: 4000}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	held := withDisk(c, 1000)
	held.State, held.Intent = sbx.StatePaused, sbx.IntentNone
	if err := s.InsertSandbox(ctx, held); err != nil {
		t.Fatal(err)
	}
	admitted := contend(t, 20, func(int) error { return s.InsertSandbox(ctx, withDisk(c, 1000)) })
	use, err := s.PlanUse(ctx, c.Org.ID)
	if admitted != 3 || err != nil || use.DiskMB != 4000 {
		t.Fatalf("%d admitted, %d MB held (%v); want 3 and 4000 MB", admitted, use.DiskMB, err)
	}
}

// Sandboxes recorded before migration 0009 had the provider's default cap,
// and orgs no disk limit.
func TestDiskMigrationKeepsExistingSandboxes(t *testing.T) { dialects(t, diskMigration) }

func diskMigration(t *testing.T, dsn string) {
	db := migratedBelow(t, dsn, 9)
	defer db.Close()
	for _, stmt := range []string{
		`INSERT INTO orgs (id, name, created_at, plan_max_sandboxes) VALUES ('o1', 'old', 1, 3)`,
		`INSERT INTO workspaces (id, org_id, name, created_at) VALUES ('w1', 'o1', 'default', 1)`,
		`INSERT INTO projects (id, org_id, workspace_id, name, created_at) VALUES ('p1', 'o1', 'w1', 'default', 1)`,
		`INSERT INTO sandboxes (id, org_id, workspace_id, project_id, provider, provider_sandbox_id, kind, template_id,
			state, created_at, timeout_s, milli_cpu, memory_mb, updated_at)
			VALUES ('3f0c6b8e-0000-4000-8000-000000000001', 'o1', 'w1', 'p1', 'local', 'iold', 'task', 'base', 'paused', 1, 60, 1000, 512, 1)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	s := open(t, dsn)
	ctx := context.Background()
	org, err := s.GetOrg(ctx, "old")
	if err != nil || org.Plan != (sbx.Plan{MaxSandboxes: 3}) {
		t.Fatalf("an org from before: %+v %v", org, err)
	}
	if use, err := s.PlanUse(ctx, "o1"); err != nil || use != (ledger.PlanUse{DiskMB: 10240}) {
		t.Fatalf("a paused sandbox from before holds the default cap: %+v %v", use, err)
	}
}
