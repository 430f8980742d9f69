package ledger

import (
	"context"
	"fmt"
	"strings"

	"github.com/sbxdev/sbx"
)

// Plan admission. An org's plan bounds the compute its sandboxes hold at
// once: those starting or running, and those paused with a resume in flight;
// and the disk they hold: the writable-layer caps of those starting, running
// or paused (hibernated too), which keep their layer until they are killed.
// The ledger checks it where a row starts to hold compute or disk, in the
// same transaction that writes the row: InsertSandbox of a starting (or
// running, or paused) sandbox, and UpdateSandbox when it writes the resuming
// intent (compute only: a paused sandbox holds its disk already). The check
// locks the org's row first, so that on PostgreSQL, where transactions run
// side by side, two admissions of one org take turns and cannot both take
// the last of a limit; on SQLite every write transaction takes turns already.
// Lock order: a transaction that locks a sandbox row and its org's row locks
// the sandbox row first (UpdateSandbox does).

// PlanUse is sbx.PlanUse.
type PlanUse = sbx.PlanUse

// holding is the condition on sandboxes rows that hold compute for the plan;
// holdingDisk, the wider one of rows that hold disk.
const (
	holding     = `(state IN ('starting', 'running') OR intent = 'resuming')`
	holdingDisk = `state IN ('starting', 'running', 'paused')`
)

// PlanUse sums what an org's sandboxes hold against its plan now; its
// disk counts its snapshots and volumes too.
func (s *Store) PlanUse(ctx context.Context, orgID string) (PlanUse, error) {
	return planUse(ctx, s.read(ctx), orgID, "")
}

// ProviderUse sums what the sandboxes of every org on one provider hold, as
// PlanUse does for one org: the load of a host, for the operator's summary.
func (s *Store) ProviderUse(ctx context.Context, provider string) (PlanUse, error) {
	return sumUse(ctx, s.read(ctx), `provider = ?`, provider)
}

func planUse(ctx context.Context, q db, orgID, except string) (PlanUse, error) {
	u, err := sumUse(ctx, q, `org_id = ? AND id <> ?`, orgID, except)
	if err != nil {
		return u, err
	}
	held, err := storageMB(ctx, q, orgID, except)
	u.DiskMB += held
	return u, err
}

// storageMB is what an org's snapshots and volumes (but except) hold on
// disk, in MiB: a volume its cap, a snapshot its size.
func storageMB(ctx context.Context, q db, orgID, except string) (int64, error) {
	var volumes, snapshots int64
	if err := q.row(ctx, `SELECT CAST(coalesce(sum(size_mb), 0) AS BIGINT) FROM volumes WHERE org_id = ? AND id <> ? AND state <> 'deleted'`,
		orgID, except).Scan(&volumes); err != nil {
		return 0, err
	}
	err := q.row(ctx, `SELECT CAST(coalesce(sum((size_bytes + 1048575) / 1048576), 0) AS BIGINT) FROM snapshots
		WHERE org_id = ? AND id <> ? AND state IN ('creating', 'ready')`, orgID, except).Scan(&snapshots)
	return volumes + snapshots, err
}

// admitStorage checks, inside tx, that org's plan leaves room on its disk
// for mb more of storage held by resource id (a volume's cap; a snapshot,
// whose size is not known before, asks for none beyond the plan's being
// full). It locks the org's row until tx ends.
func admitStorage(ctx context.Context, tx db, orgID, id string, mb int64, what string) error {
	org, err := getOrg(ctx, tx, orgID, true)
	if err != nil || org.Plan.MaxDiskMB == 0 {
		return err
	}
	use, err := planUse(ctx, tx, orgID, id)
	if err != nil {
		return err
	}
	if use.DiskMB+mb > org.Plan.MaxDiskMB || (mb == 0 && use.DiskMB >= org.Plan.MaxDiskMB) {
		return sbx.Errorf(sbx.EPlanLimit, "plan limit: at most %d MB of disk across sandboxes, snapshots and volumes (%d MB held, %s asks for %d MB more); "+
			"delete a snapshot, a volume or a sandbox, or ask the operator for a larger plan", org.Plan.MaxDiskMB, use.DiskMB, what, mb)
	}
	return nil
}

// sumUse sums what the sandboxes matching where hold.
func sumUse(ctx context.Context, q db, where string, args ...any) (PlanUse, error) {
	var u PlanUse
	err := q.row(ctx, `SELECT count(CASE WHEN `+holding+` THEN 1 END),
		CAST(coalesce(sum(CASE WHEN `+holding+` THEN milli_cpu ELSE 0 END), 0) AS BIGINT),
		CAST(coalesce(sum(CASE WHEN `+holding+` THEN memory_mb ELSE 0 END), 0) AS BIGINT),
		CAST(coalesce(sum(CASE WHEN `+holding+` THEN gpu_count * gpu_fraction ELSE 0 END), 0) AS BIGINT),
		CAST(coalesce(sum(disk_mb), 0) AS BIGINT)
		FROM sandboxes WHERE `+where+` AND `+holdingDisk, args...).
		Scan(&u.Sandboxes, &u.MilliCPU, &u.MemoryMB, &u.GPUPercent, &u.DiskMB)
	return u, err
}

// takesCompute reports whether a sandbox row in this state holds compute.
func takesCompute(sb sbx.Sandbox) bool {
	return sb.State == sbx.StateStarting || sb.State == sbx.StateRunning || sb.Intent == sbx.IntentResuming
}

// holdsDisk reports whether a sandbox row in this state holds its writable layer.
func holdsDisk(sb sbx.Sandbox) bool {
	return sb.State == sbx.StateStarting || sb.State == sbx.StateRunning || sb.State == sbx.StatePaused
}

// startsCompute reports whether an update from before to after is the start
// of a resume: the moment a paused sandbox asks for compute again.
func startsCompute(before, after sbx.Sandbox) bool {
	return before.Intent == sbx.IntentNone && after.Intent == sbx.IntentResuming
}

// admit checks, inside tx, that the plan of sb's org lets sb hold compute
// (when it takes compute) on top of what the org's other sandboxes hold, and
// that sb's workspace is within the plan's member limit; and for a new row
// that holds disk, that its disk fits. It locks the org's row until tx ends.
func admit(ctx context.Context, tx db, sb sbx.Sandbox, newRow bool) error {
	org, err := getOrg(ctx, tx, sb.OrgID, true)
	if err != nil {
		return err
	}
	p := org.Plan
	compute := takesCompute(sb)
	if compute && p.MaxMembers > 0 {
		var ws string
		var members int
		if err := tx.row(ctx, `SELECT w.name, (SELECT count(*) FROM memberships m WHERE m.workspace_id = w.id)
			FROM workspaces w WHERE w.id = ?`, sb.WorkspaceID).Scan(&ws, &members); err != nil {
			return err
		}
		if members > p.MaxMembers {
			return sbx.Errorf(sbx.EPlanLimit, "plan limit: workspace %s has %d members, more than the %d per workspace the plan allows; "+
				"its sandboxes stay paused until an owner or admin removes members or the operator raises the plan", ws, members, p.MaxMembers)
		}
	}
	// The limits that bound sb here: its compute's, when it takes compute
	// and the plan sets any; its disk's, for a new row that holds disk.
	boundCompute := compute && (p.MaxSandboxes > 0 || p.MaxMilliCPU > 0 || p.MaxMemoryMB > 0 || p.MaxGPUPercent > 0)
	boundDisk := newRow && holdsDisk(sb) && p.MaxDiskMB > 0
	if !boundCompute && !boundDisk {
		return nil
	}
	use, err := planUse(ctx, tx, sb.OrgID, sb.ID)
	if err != nil {
		return err
	}
	res := sb.Resources
	gpu := 0
	if res.GPU != nil {
		gpu = res.GPU.Count * res.GPU.Fraction
	}
	const advice = "stop or pause a sandbox, or ask the operator for a larger plan"
	switch {
	case !boundCompute:
	case p.MaxSandboxes > 0 && use.Sandboxes+1 > p.MaxSandboxes:
		return sbx.Errorf(sbx.EPlanLimit, "plan limit: at most %d concurrent sandboxes (%d running or starting); %s",
			p.MaxSandboxes, use.Sandboxes, advice)
	case p.MaxMilliCPU > 0 && use.MilliCPU+res.MilliCPU > p.MaxMilliCPU:
		return sbx.Errorf(sbx.EPlanLimit, "plan limit: at most %s vCPU across running sandboxes (%s in use, this one asks for %s); %s",
			vcpu(p.MaxMilliCPU), vcpu(use.MilliCPU), vcpu(res.MilliCPU), advice)
	case p.MaxMemoryMB > 0 && use.MemoryMB+res.MemoryMB > p.MaxMemoryMB:
		return sbx.Errorf(sbx.EPlanLimit, "plan limit: at most %d MB of memory across running sandboxes (%d MB in use, this one asks for %d MB); %s",
			p.MaxMemoryMB, use.MemoryMB, res.MemoryMB, advice)
	case p.MaxGPUPercent > 0 && gpu > 0 && use.GPUPercent+gpu > p.MaxGPUPercent:
		return sbx.Errorf(sbx.EPlanLimit, "plan limit: at most %d%% of a GPU across running sandboxes (%d%% in use, this one asks for %d%%); %s",
			p.MaxGPUPercent, use.GPUPercent, gpu, advice)
	}
	if boundDisk && use.DiskMB+res.DiskMB > p.MaxDiskMB {
		return sbx.Errorf(sbx.EPlanLimit, "plan limit: at most %d MB of disk across sandboxes not yet killed (%d MB held by running and paused sandboxes, this one asks for %d MB); "+
			"ask for a smaller disk (diskMB), delete a sandbox (a paused one keeps its disk), or ask the operator for a larger plan",
			p.MaxDiskMB, use.DiskMB, res.DiskMB)
	}
	return nil
}

// vcpu renders thousandths of a vCPU as a number of vCPU.
func vcpu(milli int64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%d.%03d", milli/1000, milli%1000), "0"), ".")
}

// SandboxesInWorkspace lists a workspace's sandboxes in any of states,
// oldest first: what a member-limit pause or release acts on.
func (s *Store) SandboxesInWorkspace(ctx context.Context, workspaceID string, states ...sbx.State) ([]sbx.Sandbox, error) {
	args := []any{workspaceID}
	for _, st := range states {
		args = append(args, string(st))
	}
	rows, err := s.read(ctx).query(ctx, `SELECT `+sandboxColumns+` FROM sandboxes
		WHERE workspace_id = ? AND state IN (`+strings.TrimSuffix(strings.Repeat("?, ", len(states)), ", ")+`)
		ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, err
	}
	return s.scanSandboxes(rows)
}
