package apiv1

import "time"

// CreateSnapshotRequest is the body of POST /api/v1/sandboxes/{id}/snapshots.
type CreateSnapshotRequest struct {
	Name     string            `json:"name,omitempty" maxLength:"128" doc:"A name to know it by."`
	Metadata map[string]string `json:"metadata,omitempty"`
	Memory   *bool             `json:"memory,omitempty" doc:"Capture memory and processes too (default true): a sandbox started from it goes on where the source was. false: its files alone (the writable layer laid over its template's tree), which a sandbox started from it boots on with fresh processes (its template's start command runs again); not of a hibernated sandbox."`
}

// Snapshot is a sandbox's captured state: a record of its own, owned by the
// source's project, that outlives its source and starts any number of
// sandboxes (POST /api/v1/sandboxes with snapshotID).
type Snapshot struct {
	ID              string            `json:"id" doc:"The snapshot's sbx UUID."`
	Name            string            `json:"name,omitempty"`
	SourceSandboxID string            `json:"sourceSandboxID" doc:"The sbx UUID of the sandbox it was captured from."`
	Provider        string            `json:"provider"`
	TemplateID      string            `json:"templateID"`
	TemplateVersion string            `json:"templateVersion,omitempty" doc:"The version of the template's tree it lies on, kept while the snapshot is."`
	State           string            `json:"state" enum:"creating,ready,failed,deleted"`
	Memory          bool              `json:"memory" doc:"Holds memory and processes, not only files."`
	SizeBytes       int64             `json:"sizeBytes" doc:"What it holds on disk, billed per GiB held (snapshot_storage)."`
	PausedMs        int64             `json:"pausedMs" doc:"How long the source stood still while it was captured, in milliseconds."`
	CPU             float64           `json:"cpu"`
	MemoryMB        int64             `json:"memoryMB"`
	DiskMB          int64             `json:"diskMB"`
	Metadata        map[string]string `json:"metadata"`
	Diagnostic      string            `json:"diagnostic,omitempty"`
	OrgID           string            `json:"orgID"`
	WorkspaceID     string            `json:"workspaceID"`
	ProjectID       string            `json:"projectID"`
	CreatedAt       time.Time         `json:"createdAt"`
	ReadyAt         *time.Time        `json:"readyAt,omitempty"`
	DeletedAt       *time.Time        `json:"deletedAt,omitempty"`
	BilledCredits   string            `json:"billed_credits" doc:"Credits its storage has paid, as a decimal string."`
}

// SnapshotList is a page of snapshots.
type SnapshotList struct {
	Items      []Snapshot `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// ForkRequest is the body of POST /api/v1/sandboxes/{id}/fork.
type ForkRequest struct {
	Count int `json:"count,omitempty" minimum:"1" doc:"How many children, default 1, at most the server's maximum (serve --max-forks, default 16)."`
}

// ForkResult is what a fork made: its children, each running, and the
// errors of those it could not make (none of them is left half-made).
type ForkResult struct {
	Children []Sandbox `json:"children"`
	Errors   []string  `json:"errors"`
}

// CreateVolumeRequest is the body of POST /api/v1/volumes.
type CreateVolumeRequest struct {
	Name      string `json:"name" pattern:"^[a-z0-9][a-z0-9._-]{0,63}$" doc:"Unique among the project's volumes."`
	SizeMB    int64  `json:"sizeMB" minimum:"1" doc:"Its cap in MiB: a write past it fails with ENOSPC inside the sandbox."`
	ProjectID string `json:"projectID,omitempty" doc:"The project it belongs to, one the key reaches; default the key's."`
}

// ResizeVolumeRequest is the body of POST /api/v1/volumes/{volume}/resize.
type ResizeVolumeRequest struct {
	SizeMB int64 `json:"sizeMB" minimum:"1" doc:"The new cap in MiB, more than the current one."`
}

// Volume is named storage with a size cap in a project, outliving the
// sandboxes that mount it.
type Volume struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	SizeMB      int64      `json:"sizeMB"`
	State       string     `json:"state" enum:"creating,ready,resizing,deleted"`
	Provider    string     `json:"provider"`
	OrgID       string     `json:"orgID"`
	WorkspaceID string     `json:"workspaceID"`
	ProjectID   string     `json:"projectID"`
	CreatedAt   time.Time  `json:"createdAt"`
	DeletedAt   *time.Time `json:"deletedAt,omitempty"`
}

// VolumeList is a page of volumes.
type VolumeList struct {
	Items      []Volume `json:"items"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// SetWarmPoolRequest is the body of PUT /api/v1/admin/template-warm-pools/{template}.
type SetWarmPoolRequest struct {
	MinReady int      `json:"min_ready" minimum:"0" doc:"Sandboxes kept ready: the refill starts members until this many are ready or starting."`
	MaxReady int      `json:"max_ready" minimum:"1" maximum:"1000" doc:"The most members the pool holds, at least min_ready."`
	CPU      *float64 `json:"cpu,omitempty" minimum:"0.001" doc:"The members' vCPU (default the server's); a create asking another size goes cold."`
	MemoryMB *int64   `json:"memoryMB,omitempty" minimum:"64"`
	DiskMB   *int64   `json:"diskMB,omitempty" minimum:"1"`
}

// WarmPool is a template's warm pool and what it holds now.
type WarmPool struct {
	Template  string    `json:"template"`
	MinReady  int       `json:"min_ready"`
	MaxReady  int       `json:"max_ready"`
	CPU       float64   `json:"cpu"`
	MemoryMB  int64     `json:"memoryMB"`
	DiskMB    int64     `json:"diskMB"`
	Ready     int       `json:"ready" doc:"Members running and idle, which a checkout takes."`
	Starting  int       `json:"starting"`
	ProjectID string    `json:"projectID" doc:"The project its members belong to, and are billed to, while they wait."`
	UpdatedAt time.Time `json:"updatedAt"`
}

// WarmPoolList is every warm pool.
type WarmPoolList struct {
	Items []WarmPool `json:"items"`
}

// ReadyTemplate is where a template's ready snapshot stands.
type ReadyTemplate struct {
	Template   string    `json:"template"`
	State      string    `json:"state" enum:"preparing,ready,failed,none" doc:"preparing: a sandbox boots and is waited for (in this serve); ready: creates of its size restore snapshot; failed: the last preparation's diagnostic (in this serve); none."`
	Snapshot   *Snapshot `json:"snapshot,omitempty"`
	Diagnostic string    `json:"diagnostic,omitempty"`
}

// PrepareTemplateRequest is the body of PUT /api/v1/admin/templates/{template}/ready.
type PrepareTemplateRequest struct {
	Command  string   `json:"command,omitempty" doc:"Ready when this command (sh -c, as root) exits 0; or give port."`
	Port     int      `json:"port,omitempty" minimum:"1" maximum:"65535" doc:"Ready when something listens on this TCP port inside the sandbox."`
	Timeout  *int64   `json:"timeout,omitempty" minimum:"1" maximum:"1800" doc:"Seconds to wait for the check to pass; default 120."`
	CPU      *float64 `json:"cpu,omitempty" minimum:"0.001" doc:"The size of the sandboxes that restore it (default the server's); a create asking another boots."`
	MemoryMB *int64   `json:"memoryMB,omitempty" minimum:"64"`
	DiskMB   *int64   `json:"diskMB,omitempty" minimum:"1"`
	WarmCode []string `json:"warmCode,omitempty" doc:"Languages (python, bash, javascript) whose default code context starts before the capture: its kernel is warm in every sandbox that restores it."`
}
