// Package apiv1 holds the JSON bodies of sbx's REST API, version 1: what the
// server sends and the Go client reads. The OpenAPI document in package
// httpapi describes the same shapes; the contract test keeps them together.
package apiv1

import (
	"fmt"
	"time"
)

// IdempotencyHeader carries a client's key for a request it may retry (a
// create, a runtime's start): the same key with an equal request answers
// what the first request made.
const IdempotencyHeader = "Idempotency-Key"

// CreateSandboxRequest is the body of POST /api/v1/sandboxes.
type CreateSandboxRequest struct {
	TemplateID string            `json:"templateID,omitempty" maxLength:"512" doc:"Template to start from: a name (base, code-interpreter, one of the project's), NAME:TAG (the version a tag names), a project's template ID (tpl-…), or a public image's reference with a registry path (REGISTRY/REPOSITORY[:TAG][@DIGEST], pulled and cached on first use); or give image, with credentials."`
	ProjectID  string            `json:"projectID,omitempty" doc:"The project the sandbox belongs to: one the key reaches (an org's key any of its org, a member's key one of its workspaces', a project's key its own). Default the key's project (an org's key: the org's first)."`
	Image      *Image            `json:"image,omitempty" doc:"An OCI image to start from in place of a template: its registry is asked at once (with the credentials given), the image pulled and kept by its digest on first use."`
	SnapshotID string            `json:"snapshotID,omitempty" format:"uuid" doc:"A snapshot to start from in place of a template: the sandbox goes on from the snapshot's memory, processes and files, with its own ID, address, access token, timeout and env (its source's env is replaced), and the snapshot's cpu, memory and disk (give none). Any number of sandboxes start from one snapshot."`
	Timeout    *int64            `json:"timeout,omitempty" minimum:"1" doc:"Seconds until the sandbox is killed (or paused, with autoPause); default 3600, at most the server maximum."`
	WaitReady  bool              `json:"waitReady,omitempty"`
	EnvVars    map[string]string `json:"envVars,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	AutoPause  bool              `json:"autoPause,omitempty"`
	CPU        *float64          `json:"cpu,omitempty" minimum:"0.001" doc:"vCPU; default 2."`
	MemoryMB   *int64            `json:"memoryMB,omitempty" minimum:"64" doc:"Memory limit in MiB; default 512."`
	DiskMB     *int64            `json:"diskMB,omitempty" minimum:"1" doc:"Cap of the sandbox's writable layer in MiB, held on the host's disk until the sandbox is killed; default the server's (10240), at most the server maximum."`
	GPU        *GPU              `json:"gpu,omitempty"`
	Kind       string            `json:"kind,omitempty" enum:"task,runtime,world"` // default task
	Preview    *Preview          `json:"preview,omitempty"`
	Ports      []int             `json:"ports,omitempty" doc:"Ports the sandbox serves, listed with their preview URLs in its detail (every port is reachable either way); not 22 or 49983."`
	Egress     *Egress           `json:"egress,omitempty" doc:"What the sandbox may connect to; default: its template's default policy, else the server's (the internet, or none with serve --deny-egress)."`
	Provider   string            `json:"provider,omitempty" maxLength:"64" doc:"The provider the sandbox runs on, one of the server's (GET /api/v1/observability/summary lists them with their capabilities); default the server's default provider (a sandbox from a snapshot: the snapshot's)."`
	WarmPool   string            `json:"warmPool,omitempty" enum:"prefer,require,bypass" doc:"How the create uses its template's warm pool: prefer (the default) checks out a ready sandbox when the pool has one and the create's options allow (its size, no volumes, GPU, image or snapshot; env, metadata, timeout, egress and ports are the create's own), else creates cold and says why in the timeline; require fails with 503 warm_pool_unavailable instead; bypass never uses the pool."`
	Volumes    []VolumeMount     `json:"volumes,omitempty" doc:"Volumes of its project to mount (at most 8), each at a directory the template has. One sandbox at a time mounts a volume read-write; any number read-only."`
}

// VolumeMount is a volume mounted into a sandbox.
type VolumeMount struct {
	Name     string `json:"name" pattern:"^[a-z0-9][a-z0-9._-]{0,63}$" doc:"The volume's name in the sandbox's project."`
	Path     string `json:"path" doc:"Where it is mounted: an absolute path of a directory the template has, such as /mnt, /srv or /workspace."`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Image is an OCI image a sandbox starts from. The credentials serve the
// create's pull alone: they are never stored, logged or shown again.
type Image struct {
	URI      string `json:"uri" doc:"An image reference: REGISTRY/REPOSITORY[:TAG] or @sha256:DIGEST (docker.io's short forms as docker pull reads them). Public registries, and private ones the operator allows (serve --private-registries)."`
	Username string `json:"username,omitempty" doc:"Registry username, with password."`
	Password string `json:"password,omitempty" doc:"Registry password or token, with username."`
}

// Egress is a sandbox's outbound policy. Whatever it says, a sandbox never
// reaches the host, another sandbox, or a private, link-local (cloud
// metadata), loopback or reserved address, nor anything over IPv6.
type Egress struct {
	Mode  string   `json:"mode" enum:"internet,none,allow" doc:"internet: every public IPv4 address and DNS through the host's resolvers; none: nothing, not even DNS; allow: only what allow names (and DNS when it names a domain)."`
	Allow []string `json:"allow,omitempty" doc:"With mode allow: IPv4 addresses, CIDR prefixes and domain names (a name stands for the addresses the host's resolvers give, looked up again every 30 seconds), at most 100."`
	Deny  []string `json:"deny,omitempty" doc:"With mode internet or allow: addresses, prefixes and domain names never reached, whatever else says; at most 100."`
}

// GPU is a GPU request: Fraction is a share of one card in percent.
type GPU struct {
	Type     string `json:"type"`
	Count    int    `json:"count,omitempty" minimum:"1" maximum:"8" doc:"Default 1."`
	Fraction int    `json:"fraction,omitempty" enum:"25,50,75,100"` // default 100
}

// TimeoutRequest is the body of POST …/resume and …/timeout.
type TimeoutRequest struct {
	Timeout *int64 `json:"timeout,omitempty" minimum:"1" doc:"Seconds."`
}

// ConnectRequest is the body of POST …/connect.
type ConnectRequest struct {
	Timeout           *int64 `json:"timeout,omitempty" minimum:"1" doc:"Seconds."`
	RotateAccessToken bool   `json:"rotateAccessToken,omitempty" doc:"Give the sandbox a new access token; the old one stops working at once."`
}

// PauseRequest is the body of POST …/pause.
type PauseRequest struct {
	Hibernate bool `json:"hibernate,omitempty" doc:"Checkpoint memory and processes to disk and release them (a running or memory-paused sandbox); resume restores it. Default: freeze in memory."`
}

// RefreshRequest is the body of POST …/refreshes.
type RefreshRequest struct {
	Duration *int64 `json:"duration,omitempty" minimum:"1" maximum:"3600" doc:"Seconds; default the sandbox timeout, at most 3600."`
}

// Sandbox is a sandbox as the API shows it.
type Sandbox struct {
	SandboxID             string            `json:"sandboxID" doc:"The provider sandbox ID: the handle for the CLI, logs and provider operations."`
	ID                    string            `json:"id" doc:"The sbx UUID of the ledger row."`
	Provider              string            `json:"provider"`
	Kind                  string            `json:"kind" enum:"task,runtime,world"`
	TemplateID            string            `json:"templateID"`
	State                 string            `json:"state" enum:"starting,running,paused,killed,failed"`
	PauseReason           string            `json:"pause_reason,omitempty" enum:"user,timeout,insufficient_credits,member_limit_exceeded"`
	EndReason             string            `json:"end_reason,omitempty" enum:"deleted,timeout,error,lost"`
	Diagnostic            string            `json:"diagnostic,omitempty"`
	OrgID                 string            `json:"orgID"`
	WorkspaceID           string            `json:"workspaceID"`
	ProjectID             string            `json:"projectID"`
	CreatedAt             time.Time         `json:"createdAt"`
	StartedAt             *time.Time        `json:"startedAt,omitempty"`
	PausedAt              *time.Time        `json:"pausedAt,omitempty"`
	Hibernated            bool              `json:"hibernated,omitempty" doc:"Paused with its memory on disk and its processes released; resume restores it."`
	EndedAt               *time.Time        `json:"endedAt,omitempty"`
	ExpiresAt             *time.Time        `json:"expiresAt,omitempty"`
	Timeout               int64             `json:"timeout"` // seconds
	AutoPause             bool              `json:"autoPause"`
	CPU                   float64           `json:"cpu"`
	MemoryMB              int64             `json:"memoryMB"`
	DiskMB                int64             `json:"diskMB" doc:"Cap of the writable layer in MiB."`
	GPU                   *GPU              `json:"gpu,omitempty"`
	Egress                *Egress           `json:"egress,omitempty" doc:"The outbound policy its provider enforces; absent for a sandbox whose provider enforces none, or made before sandboxes had policies."`
	EnvVarNames           []string          `json:"envVarNames"`
	Metadata              map[string]string `json:"metadata"`
	SnapshotID            string            `json:"snapshotID,omitempty" doc:"The snapshot it started from (a fork's child: the fork's own capture, deleted once the children run)."`
	ForkedFrom            string            `json:"forkedFrom,omitempty" doc:"The sbx UUID of the sandbox it was forked from; its metadata says so too (sbx.forkOf)."`
	Volumes               []VolumeMount     `json:"volumes,omitempty" doc:"What it mounts (on detail, create and actions)."`
	BilledCredits         string            `json:"billed_credits" doc:"Credits already deducted, as a decimal string."`
	RunningCredits        string            `json:"running_credits" doc:"Credits accrued since the last settlement, as a decimal string."`
	EstimatedTotalCredits string            `json:"estimated_total_credits" doc:"billed_credits + running_credits, as a decimal string."`
	LastSettledAt         *time.Time        `json:"lastSettledAt,omitempty"`
	RuntimeURL            string            `json:"runtimeURL,omitempty"`  // while running
	AccessToken           string            `json:"accessToken,omitempty"` // while running
	Preview               Preview           `json:"preview"`
	Ports                 []PortURL         `json:"ports" doc:"The ports it serves (its runtime's, or as created), with their preview URLs."`
	PreviewURL            string            `json:"previewURL,omitempty" doc:"The preview URL of a port, with {port} in place of its number; until the sandbox ends."`
	TrafficToken          string            `json:"trafficToken,omitempty" doc:"Opens the sandbox's private previews (never its agent); until the sandbox ends. Rotating the access token rotates it."`
	Timeline              []Event           `json:"timeline,omitempty"` // on detail, create and actions
}

// Event is one step of a sandbox's timeline.
type Event struct {
	At     time.Time `json:"at"`
	Step   string    `json:"step"`
	Detail string    `json:"detail,omitempty"`
}

// SandboxList is a page of sandboxes.
type SandboxList struct {
	Items      []Sandbox `json:"items"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// LogLine is one line of a sandbox's log.
type LogLine struct {
	At     time.Time `json:"at"`
	Source string    `json:"source"`
	Line   string    `json:"line"`
}

// LogPage is a page of a sandbox's log, oldest first.
type LogPage struct {
	Items      []LogLine `json:"items"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// Metrics is a point-in-time measure of a running sandbox.
type Metrics struct {
	At            time.Time `json:"at"`
	CPUSeconds    float64   `json:"cpuSeconds"`
	MemoryBytes   int64     `json:"memoryBytes"`
	Processes     int64     `json:"processes"`
	NetRxBytes    int64     `json:"netRxBytes"`
	NetTxBytes    int64     `json:"netTxBytes"`
	DiskUsedBytes int64     `json:"diskUsedBytes"`
}

// Named is an ID with its name.
type Named struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Me says who the caller is.
type Me struct {
	Org       Named   `json:"org"`
	Workspace Named   `json:"workspace"`
	Project   Named   `json:"project"`
	Key       Key     `json:"key"`
	Role      string  `json:"role" enum:"owner,admin,member" doc:"The role the key acts with in the org."`
	User      *User   `json:"user,omitempty" doc:"The member a member's key acts as."`
	Operator  bool    `json:"operator,omitempty" doc:"The key acts for the operator of this sbx too."`
	Server    Version `json:"server" doc:"The sbx that answers: its version."`
}

// Version describes an sbx binary, as its Go toolchain stamped it.
type Version struct {
	Version  string `json:"version" doc:"The module version: a release tag, a pseudo-version made from the VCS revision, or (devel)."`
	Revision string `json:"revision,omitempty" doc:"The VCS revision it was built from."`
	Time     string `json:"time,omitempty" doc:"The time of that revision, RFC 3339."`
	Modified bool   `json:"modified,omitempty" doc:"The tree it was built from had uncommitted changes."`
	Go       string `json:"go,omitempty" doc:"The Go version it was built with."`
}

// Key describes the caller's API key; its secret is never shown again.
type Key struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Prefix string `json:"prefix"`
	Scope  string `json:"scope" enum:"org,project,member"`
}

// Usage sums a set of sandboxes.
type Usage struct {
	Sandboxes       int            `json:"sandboxes"`
	ByState         map[string]int `json:"by_state"`
	ByKind          map[string]int `json:"by_kind"`
	ByProvider      map[string]int `json:"by_provider"`
	RunningCPU      float64        `json:"running_vcpu"`
	RunningMemoryMB int64          `json:"running_memory_mb"`
	LifetimeSeconds float64        `json:"lifetime_seconds"`
	BilledCredits   string         `json:"billed_credits"`
}

// ProjectUsage is one project's usage.
type ProjectUsage struct {
	Project Named `json:"project"`
	Usage   Usage `json:"usage"`
}

// OrgUsage is the org sandbox usage report.
type OrgUsage struct {
	Org      Named          `json:"org"`
	Total    Usage          `json:"total"`
	Projects []ProjectUsage `json:"projects"`
}

// Summary is the observability summary.
type Summary struct {
	GeneratedAt time.Time        `json:"generatedAt"`
	Org         Named            `json:"org"`
	Plan        Plan             `json:"plan" doc:"The org's plan, by name, with its limits (0: no limit)."`
	Projects    []ProjectUsage   `json:"projects"`
	Quotas      []Quota          `json:"quotas" doc:"Each limit against the use it bounds: plan_* the org's plan against the org's sandboxes, host_* this host's capacity against every org's sandboxes on it, max_*_per_sandbox and max_timeout_seconds the server's limits of one sandbox, credits the org's balance."`
	Disk        *DiskStatus      `json:"disk,omitempty" doc:"The disk of the default provider's host, where it keeps sandboxes' writable layers; absent for providers that keep none."`
	Providers   []ProviderStatus `json:"providers"`
	Engines     []EngineStatus   `json:"engines"`
	Endpoints   []EndpointStatus `json:"endpoints"`
	NextActions []string         `json:"next_actions"`
}

// DiskStatus is the filesystem a provider keeps sandboxes on, in MiB. A
// create or resume is refused (507) when free less reserved_by_sandboxes
// less the sandbox's cap would fall below reserve.
type DiskStatus struct {
	TotalMB             int64 `json:"total_mb"`
	FreeMB              int64 `json:"free_mb"`
	ReservedBySandboxes int64 `json:"reserved_by_sandboxes_mb" doc:"What running and paused sandboxes may still write: their caps less what their layers hold."`
	ReserveMB           int64 `json:"reserve_mb" doc:"Kept free for the host (serve --disk-reserve)."`
	AvailableMB         int64 `json:"available_mb" doc:"The largest disk a new sandbox may ask for now: free less reserved_by_sandboxes less reserve (0 when below)."`
}

// Quota is one limit checked against current use.
type Quota struct {
	Name   string  `json:"name"`
	Limit  float64 `json:"limit"`
	Used   float64 `json:"used"`
	OK     bool    `json:"ok"`
	Detail string  `json:"detail"`
}

// ProviderStatus is one provider's availability.
type ProviderStatus struct {
	Name         string       `json:"name"`
	Available    bool         `json:"available"`
	Default      bool         `json:"default"`
	Detail       string       `json:"detail"`
	Capabilities Capabilities `json:"capabilities"`
}

// Capabilities lists what a provider supports.
type Capabilities struct {
	MemoryPause bool `json:"memoryPause"`
	Hibernate   bool `json:"hibernate"`
	Fork        bool `json:"fork"`
	Snapshots   bool `json:"snapshots"`
	GPU         bool `json:"gpu"`
}

// EngineStatus is one isolation engine found (or not) on this host.
type EngineStatus struct {
	Name      string `json:"name"`
	Path      string `json:"path,omitempty"`
	Version   string `json:"version,omitempty"`
	Available bool   `json:"available"`
	Detail    string `json:"detail"`
}

// EndpointStatus is one endpoint's availability.
type EndpointStatus struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Available bool   `json:"available"`
	Detail    string `json:"detail"`
}

// Error is the error envelope of every 4xx and 5xx answer.
type Error struct {
	Code   int          `json:"code"`
	Type   string       `json:"type" enum:"invalid,unauthorized,forbidden,kyc_required,plan_limit_exceeded,insufficient_credits,not_found,method_not_allowed,conflict,idempotency_key_reused,too_large,unsupported_media_type,insufficient_storage,not_supported,provider_error,unavailable,warm_pool_unavailable,timeout,internal"`
	Detail string       `json:"detail"`
	Errors []FieldError `json:"errors"`
}

// errorTypes is the Error.Type of each status the API answers with.
var errorTypes = map[int]string{
	400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed", 409: "conflict",
	413: "too_large", 415: "unsupported_media_type", 422: "idempotency_key_reused", 507: "insufficient_storage",
	500: "internal", 501: "not_supported", 502: "provider_error", 503: "unavailable", 504: "timeout",
}

// ErrorType is the Error.Type for an HTTP status: the API's own name for it,
// or http_<status> for one the API does not use.
func ErrorType(status int) string {
	if t, ok := errorTypes[status]; ok {
		return t
	}
	return fmt.Sprintf("http_%d", status)
}

// FieldError names one bad field of a request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Detail }
