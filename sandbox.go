package sbx

import (
	"regexp"
	"time"
)

// State is a sandbox's public state.
type State string

// The public states. Internal steps (creating, pausing, …) are timeline events.
const (
	StateStarting State = "starting"
	StateRunning  State = "running"
	StatePaused   State = "paused"
	StateKilled   State = "killed"
	StateFailed   State = "failed"
)

// States lists every public state, in lifecycle order.
var States = []State{StateStarting, StateRunning, StatePaused, StateKilled, StateFailed}

// Valid reports whether s is one of the public states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Final reports whether no transition leaves s except a delete's cleanup.
func (s State) Final() bool { return s == StateKilled || s == StateFailed }

// Kind says why compute exists.
type Kind string

// The sandbox kinds of the ledger.
const (
	KindTask    Kind = "task"
	KindRuntime Kind = "runtime"
	KindWorld   Kind = "world"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return k == KindTask || k == KindRuntime || k == KindWorld }

// PauseReason says why a sandbox is paused.
type PauseReason string

// The pause reasons.
const (
	PauseUser                PauseReason = "user"
	PauseTimeout             PauseReason = "timeout"
	PauseInsufficientCredits PauseReason = "insufficient_credits"
	PauseMemberLimitExceeded PauseReason = "member_limit_exceeded"
)

// EndReason says why a sandbox stopped for good.
type EndReason string

// The end reasons.
const (
	EndDeleted EndReason = "deleted" // someone deleted it
	EndTimeout EndReason = "timeout" // it reached its expiry
	EndError   EndReason = "error"   // the provider failed to start or keep it
	EndLost    EndReason = "lost"    // the provider no longer knows it
)

// Intent is the operation in progress on a sandbox: written to the ledger before
// the provider is called and cleared when the outcome is settled, so that a
// restart knows what was interrupted.
type Intent string

// The intents.
const (
	IntentNone         Intent = ""
	IntentCreating     Intent = "creating"
	IntentPausing      Intent = "pausing"
	IntentHibernating  Intent = "hibernating"
	IntentResuming     Intent = "resuming"
	IntentKilling      Intent = "killing"
	IntentSnapshotting Intent = "snapshotting"
)

// Resources are what a sandbox asked for.
type Resources struct {
	MilliCPU int64 // thousandths of a vCPU
	MemoryMB int64
	DiskMB   int64 // the cap of the sandbox's writable layer, which it holds on disk until it is killed
	GPU      *GPURequest
}

// GPURequest asks for GPUs of a type; Fraction is the share of one card in
// percent (25, 50, 75 or 100) and is below 100 only when Count is 1.
type GPURequest struct {
	Type     string
	Count    int
	Fraction int
}

// Sandbox is one row of the compute ledger.
type Sandbox struct {
	ID                string // sbx UUID
	OrgID             string
	WorkspaceID       string
	ProjectID         string
	Provider          string
	ProviderSandboxID string
	Kind              Kind
	TemplateID        string
	State             State
	Intent            Intent
	// OpOwner is the serve process that runs the operation Intent names
	// (its owner ID, which it holds live in the ledger: Store.Hold), so
	// that another serve's reconcile leaves a live one's operation alone
	// and settles a dead one's; "" on rows from before owners.
	OpOwner       string
	PauseReason   PauseReason // set while paused
	EndReason     EndReason   // set once killed or failed
	Diagnostic    string
	CreatedAt     time.Time
	StartedAt     time.Time // zero until running
	PausedAt      time.Time // last pause; zero when never paused
	Hibernated    bool      // paused with its memory on disk and its processes released
	EndedAt       time.Time // zero until final
	Timeout       time.Duration
	ExpiresAt     time.Time // zero while paused or final
	AutoPause     bool
	Preview       Preview
	Ports         []int // the ports it serves (its runtime's, or as created), listed with their preview URLs
	Resources     Resources
	EnvVarNames   []string
	Metadata      map[string]string
	BilledMicros  int64 // billed credits in micro-credits
	UnbilledNanos int64 // owed below one micro-credit, carried to the next settlement
	LastSettledAt time.Time
	// Egress is the outbound policy the provider enforces (an EgressSetter);
	// nil where none is: a provider that enforces none, or a row recorded
	// before sandboxes had policies of their own.
	Egress     *Egress
	SnapshotID string // the snapshot it started from (a fork's too); "" for a template's or an image's
	ForkedFrom string // the sandbox it was forked from, if it was
	Pool       string // the template whose warm pool it waits in; "" once checked out, or never a member
	// Volumes are what it mounts, written with its row (the ledger keeps
	// them apart: a read of the row leaves them empty; SandboxVolumes).
	Volumes     []VolumeMount
	Handle      Handle // the provider's recovery handle; empty until created
	AccessToken string // the agent token, in clear only in memory
	// NextToken is a warm pool member's: its agent takes it too, and its
	// checkout makes it the access token without a call to the agent.
	NextToken string
	UpdatedAt time.Time
}

// Event is one step of a sandbox's timeline.
type Event struct {
	ID        int64
	SandboxID string
	At        time.Time
	Step      string // creating, ready, pausing, paused, resuming, killing, killed, failed, …
	Detail    string
}

// templateName is what a template's name looks like.
var templateName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidTemplateName reports whether name can name a template: 1-64
// lowercase letters, digits, '.', '_' or '-', starting with a letter or
// digit. Every surface's creates and the host's template builds ask it.
func ValidTemplateName(name string) bool { return templateName.MatchString(name) }
