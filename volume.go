package sbx

import (
	"context"
	"os"
	"time"
)

// Volume is named storage with a size cap that outlives the sandboxes that
// mount it: data written there is seen by the next sandbox that mounts it.
// It belongs to a project and is unique by name in it. At most one sandbox
// that is not killed or failed mounts it read-write at a time; any number
// read-only.
type Volume struct {
	ID          string // sbx UUID
	OrgID       string
	WorkspaceID string
	ProjectID   string
	Name        string
	Provider    string
	SizeMB      int64
	State       VolumeState
	CreatedAt   time.Time
	DeletedAt   time.Time
	// Its cap is billed per GiB while it lives (volume_storage).
	BilledMicros  int64
	UnbilledNanos int64
	LastSettledAt time.Time
}

// VolumeState is where a volume is in its life.
type VolumeState string

// The volume states: creating, then ready, resizing while it grows, and
// deleted at the end (the row stays).
const (
	VolumeCreating VolumeState = "creating" // its row is written, the provider makes it
	VolumeReady    VolumeState = "ready"
	VolumeResizing VolumeState = "resizing" // no create mounts it meanwhile
	VolumeDeleted  VolumeState = "deleted"
)

// VolumeMount is a volume mounted into a sandbox at Path.
type VolumeMount struct {
	VolumeID string
	Name     string
	Path     string
	ReadOnly bool
}

// VolumeProvider is implemented by providers that keep volumes and mount
// them into sandboxes (Spec.Volumes); Capabilities.Volumes says so too.
type VolumeProvider interface {
	// CreateVolume makes the volume with sbx UUID id, capped at sizeMB.
	CreateVolume(ctx context.Context, id string, sizeMB int64) error
	// ResizeVolume grows a volume's cap to sizeMB. No sandbox mounts it
	// (lifecycle sees to that).
	ResizeVolume(ctx context.Context, id string, sizeMB int64) error
	// DeleteVolume removes a volume and its data; one already gone is not
	// an error. No sandbox mounts it (lifecycle sees to that).
	DeleteVolume(ctx context.Context, id string) error
	// Volumes lists the sbx UUIDs of every volume the provider holds.
	Volumes(ctx context.Context) ([]string, error)
	// VolumeRoot opens a volume's files, confined to it, for serve to read
	// and write without a sandbox.
	VolumeRoot(ctx context.Context, id string) (*os.Root, error)
	// CheckMount says why a volume cannot be mounted at path in sandboxes
	// of template, if it cannot (an error naming the path), before the
	// create is recorded.
	CheckMount(ctx context.Context, template, path string) error
}
