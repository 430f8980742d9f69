package sbx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Provider is an isolation backend: it makes, pauses, resumes and destroys the
// compute behind sandboxes. The lifecycle package is its only caller and keeps
// the ledger in step with it.
//
// Every method that takes a Handle must work on a handle returned by an earlier
// process of the same provider: that is how sbx recovers after a restart.
type Provider interface {
	// Name is the provider's name in the ledger ("local", "docker", "e2b", …).
	Name() string
	// Capabilities says which optional operations this provider supports.
	Capabilities() Capabilities
	// Create starts the compute for spec and returns once it is usable.
	Create(ctx context.Context, spec Spec) (Instance, error)
	// Pause suspends the compute; memory is kept when Capabilities.MemoryPause.
	Pause(ctx context.Context, h Handle) error
	// Resume continues paused compute and returns its (possibly new) handle.
	Resume(ctx context.Context, h Handle) (Handle, error)
	// Kill destroys the compute. Killing compute that is already gone is not an error.
	Kill(ctx context.Context, h Handle) error
	// List returns all compute this provider holds for sbx, known to the ledger or not.
	List(ctx context.Context) ([]Instance, error)
}

// Admitter is implemented by providers that can refuse a create before it is
// recorded: a template they lack, GPUs they cannot place. The error is the
// caller's answer (a 400 or a 409 that names what is missing).
type Admitter interface {
	Admit(ctx context.Context, spec Spec) error
}

// ResumeAdmitter is implemented by providers that can refuse to resume a
// paused sandbox before the resume is recorded: a host whose disk has no
// room for what the sandbox may write once it runs again (a 507).
type ResumeAdmitter interface {
	AdmitResume(ctx context.Context, h Handle) error
}

// DiskReporter is implemented by providers that keep sandboxes' writable
// layers on a filesystem of their own host and admit creates and resumes
// by its free space.
type DiskReporter interface {
	Disk(ctx context.Context) (Disk, error)
}

// Disk is the state of the filesystem a provider keeps sandboxes on, in
// bytes. A create or resume is refused when Free - Committed - its cap would
// fall below Reserve.
type Disk struct {
	Total     int64 // the filesystem's size
	Free      int64 // what is free to be written
	Committed int64 // what the provider's live sandboxes may still write: their caps less what they hold
	Reserve   int64 // kept free for the host
}

// Hibernator is implemented by providers that can hibernate: checkpoint a
// sandbox's memory and processes to disk and release them. Resume wakes a
// hibernated sandbox (a restore) as it continues a paused one. A provider
// that can hibernate on some hosts only says which in Capabilities.Hibernate.
type Hibernator interface {
	Hibernate(ctx context.Context, h Handle) error
}

// TokenResumer is implemented by providers whose resume boots new compute
// on what a pause kept (a filesystem-only pause): the new compute's agent
// needs the sandbox's access token, which no handle holds. Lifecycle calls
// ResumeWithToken in place of Resume.
type TokenResumer interface {
	ResumeWithToken(ctx context.Context, h Handle, token string) (Handle, error)
}

// AgentDialer is implemented by providers whose sandboxes run sbx's agent as
// their first process: it returns the address (host:port) at which serve
// reaches the agent of a running sandbox.
type AgentDialer interface {
	AgentAddr(ctx context.Context, h Handle) (string, error)
}

// PortDialer is implemented by providers whose sandboxes serve reaches on
// any TCP port: it returns the address (host:port) at which serve reaches
// port of a running sandbox, whatever listens there (previews, SSH
// forwarding).
type PortDialer interface {
	PortAddr(ctx context.Context, h Handle, port int) (string, error)
}

// Died is what a provider says about compute that ended on its own.
type Died struct {
	ProviderSandboxID string
	Diagnostic        string // why, for the user: out of memory, the runtime's last log lines, …
}

// Watcher is implemented by providers that notice compute ending on its own
// (out of memory, a crashed runtime); the lifecycle marks those sandboxes failed.
type Watcher interface {
	Watch(ctx context.Context, died func(Died))
}

// LogReader is implemented by providers that keep a sandbox's own output.
type LogReader interface {
	Logs(ctx context.Context, h Handle) ([]LogLine, error)
}

// LogCursor is where a read of a provider's log stopped, for the next read
// to go on from: a byte offset, and the time the lines after it take
// until one of their own says another.
type LogCursor struct {
	Offset int64
	At     time.Time
}

// LogFollower is implemented by log readers that can go on from where an
// earlier read stopped (the zero cursor: the start), answering the whole
// lines written since and where to go on next: following a log then costs
// what it grows by, not its size.
type LogFollower interface {
	LogsFrom(ctx context.Context, h Handle, from LogCursor) ([]LogLine, LogCursor, error)
}

// MetricsReader is implemented by providers that can measure a sandbox.
type MetricsReader interface {
	Metrics(ctx context.Context, h Handle) (Metrics, error)
}

// Checker is implemented by providers that can say whether they are usable now.
type Checker interface {
	Check(ctx context.Context) error
}

// Capabilities lists the optional operations a provider supports; the API
// answers a clear error for the rest.
type Capabilities struct {
	MemoryPause bool // pause keeps memory and processes
	Hibernate   bool // checkpoint to disk and release memory
	Fork        bool
	Snapshots   bool
	GPU         bool
	Volumes     bool
}

// Spec is what the provider is asked to create.
type Spec struct {
	SandboxID         string // the sbx UUID; providers label compute with it
	ProviderSandboxID string // the ID to use where the provider lets sbx choose
	OrgID, ProjectID  string // whose it is, for providers that label compute with it
	TemplateID        string
	TemplateVersion   string // the version of the template to start from; "": its current one
	Kind              Kind
	Resources         Resources
	Env               map[string]string // values live only here, never in the ledger
	Metadata          map[string]string
	AccessToken       string
	// Egress is the sandbox's outbound policy, which a provider that is an
	// EgressSetter enforces from the start (lifecycle gives others only the
	// plain internet); the zero value is the internet.
	Egress Egress
	// Image, when set, is the OCI image the sandbox starts from in place of
	// a template (TemplateID is then its pinned reference); only a
	// provider that is an ImageStarter gets one.
	Image *ImageSpec
	// Snapshot, when set, is the snapshot the sandbox starts from (a
	// Snapshotter's): restored, with its memory, or booted on its files;
	// TemplateID is then the snapshot's template.
	Snapshot *SnapshotSource
	// Volumes are mounted at their paths (a VolumeProvider's); a restore's
	// are its snapshot's source's.
	Volumes []VolumeMount
}

// ImageSpec is an OCI image a sandbox starts from, with the registry
// credentials of its pull. The credentials live only here, in memory, for
// the create: never in the ledger, a log or an answer.
type ImageSpec struct {
	Ref string // registry/repository@sha256:… once resolved
	// Username and Password are in no JSON made of a spec (an idempotency
	// key's hash among them).
	Username, Password string `json:"-"`
}

// ImageStarter is a Provider that starts sandboxes from OCI images.
type ImageStarter interface {
	// ResolveImage asks img's registry, with img's credentials, which
	// manifest img.Ref names now, and answers img with Ref pinned to its
	// digest. Its errors are the caller's to fix and name field.
	ResolveImage(ctx context.Context, field string, img ImageSpec) (ImageSpec, error)
}

// Instance is compute a provider holds.
type Instance struct {
	SandboxID         string // the sbx UUID the compute was labelled with
	ProviderSandboxID string
	Status            InstanceStatus
	Handle            Handle
}

// InstanceStatus is the provider's view of an instance.
type InstanceStatus string

// The instance statuses.
const (
	InstanceRunning    InstanceStatus = "running"
	InstancePaused     InstanceStatus = "paused"
	InstanceHibernated InstanceStatus = "hibernated" // checkpointed to disk; Resume restores it
	InstanceDead       InstanceStatus = "dead"       // present but no longer running (crashed, exited)
)

// Handle is the opaque, versioned state a provider needs to find its compute
// again. The ledger stores it; only the provider that made it reads Data.
type Handle struct {
	Version int             `json:"v"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// IsZero reports whether h was never set.
func (h Handle) IsZero() bool { return h.Version == 0 && len(h.Data) == 0 }

// LogLine is one line of a sandbox's log.
type LogLine struct {
	At     time.Time
	Source string // "sbx" for lifecycle lines, "stdout"/"stderr"/provider names otherwise
	Line   string
}

// Metrics is a point-in-time measure of a sandbox.
type Metrics struct {
	At            time.Time
	CPUSeconds    float64
	MemoryBytes   int64
	Processes     int64
	NetRxBytes    int64
	NetTxBytes    int64
	DiskUsedBytes int64
}

// idHandle is the data of a version-1 handle that is just the provider's ID.
type idHandle struct {
	ID string `json:"id"`
}

// IDHandle returns a version-1 handle holding only a provider sandbox ID, for
// providers that need nothing more to find their compute again.
func IDHandle(id string) Handle {
	data, _ := json.Marshal(idHandle{ID: id})
	return Handle{Version: 1, Data: data}
}

// HandleID reads the ID from a handle IDHandle made; valid vets the ID.
func HandleID(h Handle, valid func(string) bool) (string, error) {
	if h.Version != 1 {
		return "", fmt.Errorf("handle version %d is not one this provider made", h.Version)
	}
	var d idHandle
	if err := json.Unmarshal(h.Data, &d); err != nil || d.ID == "" || !valid(d.ID) {
		return "", errors.New("handle is malformed")
	}
	return d.ID, nil
}
