package sbx

import "time"

// Records the ledger keeps and answers, shared by every layer above it:
// pages of lists, sandbox filters, usage, spending, plans in use.

// Page selects one page of a tenancy list (orgs, workspaces, projects,
// members, keys), oldest first.
type Page struct {
	Limit  int    // 1..1000; 0 means 100
	Cursor string // from a previous page's next cursor
}

// SandboxFilter selects sandboxes for ListSandboxes.
type SandboxFilter struct {
	OrgID      string // required
	ProjectID  string
	MemberID   string // only the sandboxes of workspaces this user is a member of
	States     []State
	TemplateID string
	Metadata   map[string]string // every pair must match
	Limit      int               // 1..1000; 0 means 100
	Cursor     string            // from a previous page's next cursor
}

// Usage sums a set of sandboxes.
type Usage struct {
	Sandboxes       int
	ByState         map[State]int
	ByKind          map[Kind]int
	ByProvider      map[string]int
	RunningMilliCPU int64   // requested by sandboxes running now
	RunningMemoryMB int64   // requested by sandboxes running now
	LifetimeSeconds float64 // from start to end (or now), summed
	BilledMicros    int64
}

// Spend is what one sandbox's settlements paid over a time range, per
// resource, in micro-credits.
type Spend struct {
	ProjectID, SandboxID, ProviderSandboxID string
	Kind                                    Kind
	Provider                                string
	CPU, Memory, GPU, Storage, Total        int64
}

// StorageKind is what holds storage outside sandboxes.
type StorageKind string

// The storage kinds, billed per GiB held.
const (
	StorageSnapshot StorageKind = "snapshot"
	StorageVolume   StorageKind = "volume"
)

// StorageSettlement is what holding a snapshot or a volume owed for an
// interval, and what the balance paid.
type StorageSettlement struct {
	ID               int64
	OrgID, ProjectID string
	Provider         string
	Kind             StorageKind
	ResourceID       string // the snapshot's or volume's sbx UUID
	Bytes            int64  // held over the interval
	From, To         time.Time
	Paid, Owed       int64
	BalanceAfter     int64
}

// StorageSpend sums storage settlements of one project, kind and provider.
type StorageSpend struct {
	ProjectID string
	Kind      StorageKind
	Provider  string
	Total     int64
}

// NewOrg is what CreateOrgWith makes.
type NewOrg struct {
	Name      string
	KYCStatus KYCStatus // default unverified
	Plan      Plan
	Credits   int64 // micro-credits it starts with, recorded as a top-up
	// Key, when its Name is set, is made with the org: an org-wide key (an
	// owner's), the operator's when Key.Operator.
	Key APIKey
}

// CreatedOrg is what CreateOrgWith made.
type CreatedOrg struct {
	Org       Org
	Workspace Workspace
	Project   Project
	Runtime   Runtime
	Key       APIKey // zero unless NewOrg.Key was named
	Secret    string // the key's secret, shown once
}

// MemberCount is how many members a workspace has after a change, and the
// most its org's plan allows (0: no limit).
type MemberCount struct {
	Members int
	Max     int
}

// Over reports whether the workspace has more members than its plan allows.
func (c MemberCount) Over() bool { return c.Max > 0 && c.Members > c.Max }

// PlanUse is what an org's sandboxes hold against its plan.
type PlanUse struct {
	Sandboxes  int
	MilliCPU   int64
	MemoryMB   int64
	GPUPercent int
	DiskMB     int64 // summed over the sandboxes holding disk, not only compute
}

// Settlement is one charge of a sandbox: what it owed for an interval and
// what its org's balance paid, per resource, in micro-credits.
type Settlement struct {
	ID                        int64
	OrgID, SandboxID          string
	State                     State // the state the interval was priced at
	From, To                  time.Time
	CPU, Memory, GPU, Storage int64 // paid, per resource
	Paid                      int64 // the sum of the resources
	Owed                      int64 // more than Paid when the balance ran out
	BalanceAfter              int64
}

// Emptied reports whether the settlement left the balance empty while the
// sandbox still owed something: the org is out of credits.
func (st Settlement) Emptied() bool { return st.Owed > 0 && st.BalanceAfter == 0 }

// Once ties a create to the Idempotency-Key its client sent: a retry with
// the same key, through the same API key, within OnceTTL finds the sandbox
// the first made instead of making another.
type Once struct {
	APIKeyID string
	Key      string // the client's Idempotency-Key
	Hash     string // what was asked (route and body), to tell a retry from another request
}

// TotalUsage sums several usages into one.
func TotalUsage(us map[string]*Usage) Usage {
	t := Usage{ByState: map[State]int{}, ByKind: map[Kind]int{}, ByProvider: map[string]int{}}
	for _, u := range us {
		t.Sandboxes += u.Sandboxes
		for k, n := range u.ByState {
			t.ByState[k] += n
		}
		for k, n := range u.ByKind {
			t.ByKind[k] += n
		}
		for k, n := range u.ByProvider {
			t.ByProvider[k] += n
		}
		t.RunningMilliCPU += u.RunningMilliCPU
		t.RunningMemoryMB += u.RunningMemoryMB
		t.LifetimeSeconds += u.LifetimeSeconds
		t.BilledMicros += u.BilledMicros
	}
	return t
}

// SnapshotFilter picks an org's snapshots, a page at a time.
type SnapshotFilter struct {
	OrgID           string // required
	ProjectID       string
	MemberID        string // only the snapshots of workspaces this user is a member of
	SourceSandboxID string
	Page
}

// VolumeFilter picks an org's volumes, a page at a time.
type VolumeFilter struct {
	OrgID     string // required
	ProjectID string
	MemberID  string // only the volumes of workspaces this user is a member of
	Page
}
