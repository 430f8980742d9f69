package apiv1

import "time"

// Tenancy: orgs and their plans and verification (the operator's routes),
// workspaces, projects, members and API keys (an org's own routes), and the
// KYC webhook.

// Plan is an org's limits; 0 is no limit.
type Plan struct {
	Name          string  `json:"name"`
	MaxSandboxes  int     `json:"max_sandboxes" minimum:"0" doc:"Concurrent sandboxes: starting, running, or resuming."`
	MaxVCPU       float64 `json:"max_vcpu" minimum:"0" doc:"vCPU summed over the org's running sandboxes."`
	MaxMemoryMB   int64   `json:"max_memory_mb" minimum:"0" doc:"Memory in MiB summed over the org's running sandboxes."`
	MaxGPUPercent int     `json:"max_gpu_percent" minimum:"0" doc:"GPU share in percent of one card, summed over the org's running sandboxes: two whole cards are 200."`
	MaxDiskMB     int64   `json:"max_disk_mb" minimum:"0" doc:"Disk in MiB: the writable-layer caps (diskMB) summed over the org's sandboxes that are starting, running or paused (hibernated too); checked at create."`
	MaxMembers    int     `json:"max_members_per_workspace" minimum:"0" doc:"Members per workspace. A member beyond it is added, but the workspace's running sandboxes are paused (pause_reason member_limit_exceeded) and none starts or resumes there until it is back within the limit."`
	MaxTimeout    int64   `json:"max_timeout" minimum:"0" doc:"Seconds: the longest timeout one sandbox may have."`
}

// SetPlanRequest is the body of PUT /api/v1/admin/orgs/{org}/plan: the
// whole plan, every limit left out or 0 being no limit.
type SetPlanRequest struct {
	Name          string   `json:"name,omitempty"`
	MaxSandboxes  int      `json:"max_sandboxes,omitempty" minimum:"0"`
	MaxVCPU       *float64 `json:"max_vcpu,omitempty" minimum:"0"`
	MaxMemoryMB   int64    `json:"max_memory_mb,omitempty" minimum:"0"`
	MaxGPUPercent int      `json:"max_gpu_percent,omitempty" minimum:"0"`
	MaxDiskMB     int64    `json:"max_disk_mb,omitempty" minimum:"0"`
	MaxMembers    int      `json:"max_members_per_workspace,omitempty" minimum:"0"`
	MaxTimeout    int64    `json:"max_timeout,omitempty" minimum:"0" doc:"Seconds."`
}

// Org is an org as the operator sees it.
type Org struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	KYCStatus string    `json:"kyc_status" enum:"unverified,pending,verified"`
	Plan      Plan      `json:"plan"`
	CreatedAt time.Time `json:"created_at"`
}

// OrgList is a page of orgs, oldest first.
type OrgList struct {
	Items      []Org  `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// CreateOrgRequest is the body of POST /api/v1/admin/orgs.
type CreateOrgRequest struct {
	Name      string          `json:"name" pattern:"^[a-z0-9][a-z0-9._-]{0,62}$"`
	KYCStatus string          `json:"kyc_status,omitempty" enum:"unverified,pending,verified" doc:"Default unverified."`
	Plan      *SetPlanRequest `json:"plan,omitempty" doc:"Default: no limits."`
	Credits   string          `json:"credits,omitempty" pattern:"^[0-9]+(\\.[0-9]{1,6})?$" doc:"Credits it starts with, a decimal string (default none: it can create sandboxes once topped up)."`
}

// CreatedOrg is a new org with its default workspace and project and an
// owner key.
type CreatedOrg struct {
	Org       Org       `json:"org"`
	Workspace Workspace `json:"workspace"`
	Project   Project   `json:"project"`
	Key       APIKey    `json:"key"`
	Secret    string    `json:"secret" doc:"The owner key's secret, shown once."`
}

// PlanChange is the answer to a plan change: the org, and the sandboxes its
// member limit paused or resumed, by provider sandbox ID.
type PlanChange struct {
	Org     Org      `json:"org"`
	Paused  []string `json:"paused"`
	Resumed []string `json:"resumed"`
}

// VerificationRequest is the body of PUT …/verification.
type VerificationRequest struct {
	Status string `json:"status" enum:"unverified,pending,verified"`
}

// User is a person, known by email across orgs.
type User struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name,omitempty"`
	KYCStatus string    `json:"kyc_status" enum:"unverified,pending,verified"`
	CreatedAt time.Time `json:"created_at"`
}

// Workspace groups projects and members.
type Workspace struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// WorkspaceList is a page of workspaces, oldest first.
type WorkspaceList struct {
	Items      []Workspace `json:"items"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

// CreateWorkspaceRequest is the body of POST /api/v1/org/{org}/workspaces.
type CreateWorkspaceRequest struct {
	Name string `json:"name" pattern:"^[a-z0-9][a-z0-9._-]{0,62}$"`
}

// Project owns sandboxes and one runtime.
type Project struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	WorkspaceID string    `json:"workspace_id"`
	RuntimeID   string    `json:"runtime_id,omitempty" doc:"The project's runtime, made with it."`
	CreatedAt   time.Time `json:"created_at"`
}

// ProjectList is a page of projects, oldest first.
type ProjectList struct {
	Items      []Project `json:"items"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// CreateProjectRequest is the body of POST …/ws/{workspace}/projects.
type CreateProjectRequest struct {
	Name string `json:"name" pattern:"^[a-z0-9][a-z0-9._-]{0,62}$"`
}

// Member is a user's membership of a workspace.
type Member struct {
	User        User      `json:"user"`
	Role        string    `json:"role" enum:"owner,admin,member"`
	WorkspaceID string    `json:"workspace_id"`
	CreatedAt   time.Time `json:"created_at"`
}

// MemberList is a page of members, by when they joined.
type MemberList struct {
	Items      []Member `json:"items"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// AddMemberRequest is the body of POST …/ws/{workspace}/members.
type AddMemberRequest struct {
	Email string `json:"email"`
	Name  string `json:"name,omitempty" doc:"For a user new to sbx; an existing user keeps theirs."`
	Role  string `json:"role,omitempty" enum:"owner,admin,member" doc:"Default member."`
}

// MemberChange is the answer to adding or removing a member: the
// membership, the workspace's members against the plan's limit, and the
// sandboxes the change paused or resumed, by provider sandbox ID.
type MemberChange struct {
	Member      Member   `json:"member"`
	Members     int      `json:"members" doc:"The workspace's members after the change."`
	MemberLimit int      `json:"member_limit" doc:"The plan's members per workspace; 0 is no limit."`
	Paused      []string `json:"paused"`
	Resumed     []string `json:"resumed"`
}

// APIKey describes a key; its secret is shown only when it is made.
type APIKey struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Prefix    string     `json:"prefix"`
	Scope     string     `json:"scope" enum:"org,project,member" doc:"org: acts as an owner of the org; project: acts in one project, as a member; member: acts as a user, with the user's role."`
	ProjectID string     `json:"project_id,omitempty"`
	UserID    string     `json:"user_id,omitempty"`
	Operator  bool       `json:"operator,omitempty" doc:"Acts for the operator of this sbx too."`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// APIKeyList is a page of keys, revoked ones included, oldest first.
type APIKeyList struct {
	Items      []APIKey `json:"items"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// CreateKeyRequest is the body of POST /api/v1/org/{org}/keys: a key of the
// org (neither user nor project_id; owners only), of a project, or of a member.
type CreateKeyRequest struct {
	Name      string `json:"name"`
	User      string `json:"user,omitempty" doc:"A member's ID or email: the key acts as that member."`
	ProjectID string `json:"project_id,omitempty" doc:"The key acts in this project only, as a member."`
}

// CreatedKey is a new key with its secret, shown once.
type CreatedKey struct {
	Key    APIKey `json:"key"`
	Secret string `json:"secret"`
}

// KYCEvent is the body of POST /api/v1/kyc/webhook.
type KYCEvent struct {
	Subject string `json:"subject" enum:"org,user"`
	ID      string `json:"id" doc:"The org's ID or name, or the user's ID or email."`
	Status  string `json:"status" enum:"unverified,pending,verified"`
}

// KYCResult is the answer to a KYC webhook.
type KYCResult struct {
	Subject string `json:"subject" enum:"org,user"`
	ID      string `json:"id"`
	Status  string `json:"status" enum:"unverified,pending,verified" doc:"The state recorded now."`
	Applied bool   `json:"applied" doc:"false when a state decided later than this event was recorded already (a late or replayed event); nothing changed."`
}
