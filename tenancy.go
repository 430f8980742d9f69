package sbx

import "time"

// Org is the billing and isolation boundary: a caller sees only its org.
type Org struct {
	ID        string
	Name      string
	KYCStatus KYCStatus // whether sandboxes may be created for it (with the KYC gate on)
	Plan      Plan
	CreatedAt time.Time
}

// Workspace groups projects inside an org; members belong to workspaces.
type Workspace struct {
	ID        string
	OrgID     string
	Name      string
	CreatedAt time.Time
}

// Project owns sandboxes, and one runtime.
type Project struct {
	ID          string
	OrgID       string
	WorkspaceID string
	Name        string
	RuntimeID   string // its runtime, made with it; set by the ledger's project lists
	CreatedAt   time.Time
}

// APIKey is a credential; the ledger keeps only the SHA-256 of its secret.
// A key is one of three kinds: org-wide (no project, no user: acts as an
// owner of its org), a project's (acts in that project only, as a member) or
// a member's (UserID: acts as that user, with the user's role in the org).
type APIKey struct {
	ID        string
	OrgID     string
	ProjectID string // a project's key: acts in this project only
	UserID    string // a member's key: acts as this user
	Name      string
	Prefix    string // the first characters of the secret, to recognise it
	Operator  bool   // acts for the operator of this sbx: credits, rates, orgs, plans, verification
	CreatedAt time.Time
	RevokedAt time.Time // zero while the key works
}

// APIKeyPrefix starts every API key's secret, so that a leaked key is
// recognisable (and sbx's own credential is told from an app's).
const APIKeyPrefix = "sbx_"

// Scope says which of the three kinds of key k is: "org", "project" or "member".
func (k APIKey) Scope() string {
	switch {
	case k.UserID != "":
		return "member"
	case k.ProjectID != "":
		return "project"
	}
	return "org"
}

// Caller is who an authenticated request acts for.
type Caller struct {
	Key       APIKey
	Org       Org
	Workspace Workspace
	Project   Project // the key's project, or the org's (a member's: their first workspace's) first project
	User      User    // the member a member's key acts as; zero for other keys
	Role      Role    // the role the key acts with in the org
}

// OrgWide reports whether the caller's key is scoped to the whole org.
func (c Caller) OrgWide() bool { return c.Key.ProjectID == "" }

// MemberScoped reports whether the caller reaches only the workspaces its
// member belongs to: a member's key whose user is an owner nowhere in the org.
func (c Caller) MemberScoped() bool { return c.User.ID != "" && c.Role != RoleOwner }

// Reach is the part of an org a caller sees in lists: everything (zero),
// the workspaces one user is a member of, or one project.
type Reach struct {
	UserID    string // only the workspaces this user is a member of
	ProjectID string // only this project, in its workspace
}

// Reach is what c sees of its org: a member's key (not an owner's) the
// workspaces of its user; a project's key its project.
func (c Caller) Reach() Reach {
	var r Reach
	if c.MemberScoped() {
		r.UserID = c.User.ID
	}
	if !c.OrgWide() {
		r.ProjectID = c.Key.ProjectID
	}
	return r
}

// Verified reports whether the caller may create sandboxes with the KYC
// gate on: its org is verified, or the member it acts as is.
func (c Caller) Verified() bool {
	return c.Org.KYCStatus == KYCVerified || (c.User.ID != "" && c.User.KYCStatus == KYCVerified)
}

// Role is what a member may do in an org.
type Role string

// The roles, strongest first. Owners and admins manage workspaces, projects,
// members and keys; members use sandboxes and read.
const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r allows everything min allows.
func (r Role) AtLeast(min Role) bool { return r.rank() >= min.rank() && r.rank() > 0 }

func (r Role) rank() int {
	switch r {
	case RoleOwner:
		return 3
	case RoleAdmin:
		return 2
	case RoleMember:
		return 1
	}
	return 0
}

// KYCStatus is how far an org or user is through identity verification.
type KYCStatus string

// The verification states.
const (
	KYCUnverified KYCStatus = "unverified"
	KYCPending    KYCStatus = "pending"
	KYCVerified   KYCStatus = "verified"
)

// Valid reports whether s is one of the verification states.
func (s KYCStatus) Valid() bool { return s == KYCUnverified || s == KYCPending || s == KYCVerified }

// User is a person, known by email, who can be a member of workspaces in
// several orgs.
type User struct {
	ID        string
	Email     string
	Name      string
	KYCStatus KYCStatus
	CreatedAt time.Time
}

// Member is a user's membership of one workspace.
type Member struct {
	OrgID         string
	WorkspaceID   string
	WorkspaceName string // where the ledger reads it with the membership
	User          User
	Role          Role
	CreatedAt     time.Time
}

// Plan is an org's limits; a zero limit is no limit. The compute limits sum
// the sandboxes of the org that are starting or running (or resuming); the
// disk limit sums those that hold a writable layer: starting, running or
// paused (hibernated too), until they are killed.
type Plan struct {
	Name          string
	MaxSandboxes  int           // concurrent sandboxes
	MaxMilliCPU   int64         // vCPU in thousandths, summed
	MaxMemoryMB   int64         // memory, summed
	MaxGPUPercent int           // GPU share in percent of one card, summed (two whole cards are 200)
	MaxDiskMB     int64         // writable-layer caps, summed over the sandboxes holding disk
	MaxMembers    int           // members per workspace; beyond it the workspace's compute is paused
	MaxTimeout    time.Duration // the longest timeout one sandbox may have
}

// Runtime is a project's durable environment: a lightweight record that
// holds zero or one current sandbox (kind runtime) and the configuration
// every sandbox it starts gets. Capability bindings and sessions hang off
// the runtime, so they outlive its sandboxes. Every project has exactly one,
// made with it.
type Runtime struct {
	ID                string
	OrgID             string
	WorkspaceID       string
	ProjectID         string
	Status            string // derived from the current sandbox: idle (none, or it ended), running, paused
	SandboxID         string // the current sandbox's sbx UUID; empty while idle
	ProviderSandboxID string // and its provider sandbox ID
	Config            RuntimeConfig
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// RuntimeConfig is what a runtime's next sandbox is made with.
type RuntimeConfig struct {
	TemplateID string
	Resources  Resources         // a zero field takes the server's default
	Timeout    time.Duration     // the sandbox's timeout; 0 takes the server's default
	Ports      []int             // the ports a client reaches at preview URLs
	Env        map[string]string // environment variables of the sandbox
	Labels     map[string]string // metadata of the sandbox
	Egress     *Egress           // the sandbox's outbound policy; nil: the template's default, else the server's
}

// The runtime states.
const (
	RuntimeIdle    = "idle"
	RuntimeRunning = "running"
	RuntimePaused  = "paused"
)

// RuntimeStatus is the status of a runtime whose current sandbox is in
// state (empty: it has none).
func RuntimeStatus(state State) string {
	switch state {
	case StateStarting, StateRunning:
		return RuntimeRunning
	case StatePaused:
		return RuntimePaused
	}
	return RuntimeIdle
}
