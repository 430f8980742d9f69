package lifecycle

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/capability"
	"github.com/sbxdev/sbx/pricing"
)

// Store is what the sandbox core (Manager) reads and writes of the ledger;
// each seam over the core declares its own (RuntimeStore, …), and
// *ledger.Store satisfies them all.
type Store interface {
	sandboxStore
	snapshotStore
	volumeStore
	poolStore
	templateStore
	buildStore
	creditStore
	usageStore
	// a member's key reaches the sandboxes of its workspaces (Get)
	MemberRole(ctx context.Context, workspaceID, userID string) (sbx.Role, error)
	// a create of a runtime's sandbox (Runtimes.Start) points the runtime at it
	InsertRuntimeSandbox(ctx context.Context, runtimeID string, once *sbx.Once, sb sbx.Sandbox, events ...sbx.Event) error
}

// sandboxStore: sandboxes: their rows, timelines and lists, and the once of an idempotent create.
type sandboxStore interface {
	InsertSandboxOnce(ctx context.Context, once *sbx.Once, sb sbx.Sandbox, events ...sbx.Event) error
	UpdateSandbox(ctx context.Context, id string, fn func(*sbx.Sandbox) ([]sbx.Event, error)) (sbx.Sandbox, error)
	GetSandbox(ctx context.Context, orgID, ref string) (sbx.Sandbox, error)
	ListSandboxes(ctx context.Context, f sbx.SandboxFilter) ([]sbx.Sandbox, string, error)
	AddEvents(ctx context.Context, sandboxID string, events ...sbx.Event) error
	Events(ctx context.Context, sandboxID string) ([]sbx.Event, error)
	OpenSandboxes(ctx context.Context, provider string) ([]sbx.Sandbox, error)
	// whether a live serve holds an operation owner ID (reconcile.go)
	Holds(ctx context.Context, owner string) (bool, error)
	FindOnce(ctx context.Context, o sbx.Once, now time.Time) (sandboxID, hash string, err error)
}

// RuntimeStore is what Runtimes reads and writes: runtimes' records and
// configuration, what a start puts in its sandbox's env, the current
// sandbox and its timeline, and the capabilities a start resolves.
type RuntimeStore interface {
	GetRuntime(ctx context.Context, orgID, workspaceID, id string) (sbx.Runtime, error)
	Runtimes(ctx context.Context, orgID, workspaceID, projectID string, p sbx.Page) ([]sbx.Runtime, string, error)
	SetRuntimeConfig(ctx context.Context, orgID, workspaceID, id string, cfg sbx.RuntimeConfig, now time.Time) (sbx.Runtime, error)
	SecretEnv(ctx context.Context, orgID, userID string, ids []string) (map[string]string, error)
	GetSandbox(ctx context.Context, orgID, ref string) (sbx.Sandbox, error)
	Events(ctx context.Context, sandboxID string) ([]sbx.Event, error)
	AddEvents(ctx context.Context, sandboxID string, events ...sbx.Event) error
	capability.Store // a start resolves and materializes the runtime's capabilities
}

// usageStore: the sums observe.go reads for the observability summary: use
// per project, and what the default provider's sandboxes hold of the host.
type usageStore interface {
	UsageByProject(ctx context.Context, orgID string, reach sbx.Reach, now time.Time) (map[string]*sbx.Usage, error)
	ProviderUse(ctx context.Context, provider string) (sbx.PlanUse, error)
}

// creditStore: an org's balance and the prices, for the core's reads of credits (credits.go).
type creditStore interface {
	Balance(ctx context.Context, orgID string) (int64, error)
	Rates(ctx context.Context) (pricing.Table, error)
}

// LoopStore is what Loops read and write: the meter's billable sandboxes
// and snapshots, their settling and the orgs out of credits; the reaper's expired and
// idle sandboxes.
type LoopStore interface {
	Billable(ctx context.Context) ([]string, error)
	Settle(ctx context.Context, id string, now time.Time, table pricing.Table) (sbx.Settlement, error)
	Unfunded(ctx context.Context) ([]string, error)
	Rates(ctx context.Context) (pricing.Table, error)
	Expired(ctx context.Context, now time.Time) ([]sbx.Sandbox, error)
	NextExpiry(ctx context.Context) (time.Time, error)
	IdlePaused(ctx context.Context, before time.Time) ([]sbx.Sandbox, error)
	OpenSnapshots(ctx context.Context, provider string) ([]sbx.Snapshot, error)
	SettleSnapshot(ctx context.Context, id string, now time.Time) (sbx.StorageSettlement, error)
	LiveVolumes(ctx context.Context, provider string) ([]sbx.Volume, error)
	SettleVolume(ctx context.Context, id string, now time.Time) (sbx.StorageSettlement, error)
}

// MemberStore is what Members reads and writes: members and plans, and a
// workspace's sandboxes the member limit pauses and resumes.
type MemberStore interface {
	AddMember(ctx context.Context, orgID, workspaceID, email, name string, role sbx.Role, now time.Time) (sbx.Member, sbx.MemberCount, error)
	RemoveMember(ctx context.Context, orgID, workspaceID, ref string) (sbx.Member, sbx.MemberCount, error)
	MemberCounts(ctx context.Context, orgID string) (map[string]sbx.MemberCount, error)
	SetPlan(ctx context.Context, ref string, p sbx.Plan) (sbx.Org, error)
	SandboxesInWorkspace(ctx context.Context, workspaceID string, states ...sbx.State) ([]sbx.Sandbox, error)
}
