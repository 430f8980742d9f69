package sbx

import (
	"context"
	"time"
)

// Snapshot is a sandbox's state captured on its provider: with Memory, its
// memory, processes and writable layer (a sandbox started from it goes on
// where the source was); without, its writable layer alone (a sandbox
// started from it boots on those files). A snapshot belongs to its
// source's project and outlives its source; any number of sandboxes start
// from it, each of its own.
type Snapshot struct {
	ID              string // sbx UUID
	OrgID           string
	WorkspaceID     string
	ProjectID       string
	SourceSandboxID string // the sandbox it was captured from
	Provider        string
	TemplateID      string // the source's template (or pinned image)
	TemplateVersion string // the version of the template's tree it lies on, kept while it does
	Name            string
	Metadata        map[string]string
	Memory          bool
	Purpose         SnapshotPurpose
	State           SnapshotState
	SizeBytes       int64         // what it holds on disk
	Paused          time.Duration // how long the source stood still while it was captured
	Resources       Resources     // the source's, which a sandbox started from it has
	EnvVarNames     []string      // the source's env at capture, which a restored sandbox's own env replaces
	Handle          Handle        // the provider's
	// AccessToken is the token the captured agent holds, for serve to give
	// a restored one its own (in clear only in memory).
	AccessToken   string
	Diagnostic    string
	CreatedAt     time.Time
	ReadyAt       time.Time // zero until ready
	DeletedAt     time.Time // zero until deleted
	BilledMicros  int64     // storage billed, in micro-credits
	UnbilledNanos int64
	LastSettledAt time.Time
}

// SnapshotState is where a snapshot is in its life.
type SnapshotState string

// The snapshot states: creating while the provider captures it, then ready
// (or failed with a diagnostic), and deleted at the end. Only a ready one
// starts sandboxes; ready and creating ones hold storage and are billed.
const (
	SnapshotCreating SnapshotState = "creating"
	SnapshotReady    SnapshotState = "ready"
	SnapshotFailed   SnapshotState = "failed"
	SnapshotDeleted  SnapshotState = "deleted"
)

// SnapshotPurpose says who a snapshot is for.
type SnapshotPurpose string

// The purposes: a user's snapshot, listed and kept until deleted; the
// capture a fork restores its children from, deleted by the fork once they
// run (and by reconcile when a restart interrupted it); a template's ready
// snapshot.
const (
	PurposeUser SnapshotPurpose = ""
	PurposeFork SnapshotPurpose = "fork"
	// PurposeTemplate is a template's ready snapshot (the operator's):
	// creates of the template restore it instead of booting, while its
	// version is the template's current one.
	PurposeTemplate SnapshotPurpose = "template"
)

// Snapshotter is implemented by providers that capture sandboxes as
// snapshots and start sandboxes from them (Spec.Snapshot): what snapshots,
// forks and restores need. Capabilities.Snapshots and Fork say so too.
type Snapshotter interface {
	// Snapshot captures the running or paused sandbox behind h as the
	// snapshot with sbx UUID id. With memory, the sandbox stands still only
	// while its memory is written, then goes on as it was, its connections
	// kept.
	Snapshot(ctx context.Context, h Handle, id string, memory bool) (SnapshotInfo, error)
	// DeleteSnapshot removes the snapshot with sbx UUID id; one already
	// gone is not an error.
	DeleteSnapshot(ctx context.Context, id string) error
	// Snapshots lists the sbx UUIDs of every snapshot the provider holds,
	// known to the ledger or not, for reconcile.
	Snapshots(ctx context.Context) ([]string, error)
}

// SnapshotInfo is what a provider says of a snapshot it made.
type SnapshotInfo struct {
	Handle          Handle
	SizeBytes       int64
	TemplateVersion string
	Paused          time.Duration
}

// SnapshotSource is what a sandbox starts from in place of a template.
type SnapshotSource struct {
	ID     string // its sbx UUID
	Handle Handle
	Memory bool
}
