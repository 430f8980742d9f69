package apiv1

import "time"

// Runtime is a project's durable environment: the record that holds zero or
// one current sandbox (kind runtime), the configuration its next sandbox is
// made with, and, hanging off it, capability bindings and sessions.
type Runtime struct {
	ID          string        `json:"id"`
	WorkspaceID string        `json:"workspace_id"`
	ProjectID   string        `json:"project_id"`
	Status      string        `json:"status" enum:"idle,running,paused" doc:"idle: no sandbox (never started, reset, or its sandbox ended); running; paused."`
	SandboxID   string        `json:"sandbox_id,omitempty" doc:"The current sandbox's provider sandbox ID, while the runtime has one."`
	Sandbox     *Sandbox      `json:"sandbox,omitempty" doc:"The current sandbox: its state, pause_reason and credit fields. Only on a single runtime's answers."`
	Config      RuntimeConfig `json:"config"`
	CreatedAt   time.Time     `json:"created_at"`
	UpdatedAt   time.Time     `json:"updated_at"`
}

// RuntimeConfig is what a runtime's next sandbox is made with.
type RuntimeConfig struct {
	TemplateID string            `json:"template_id" doc:"The template its sandboxes start from."`
	CPU        float64           `json:"cpu,omitempty" doc:"vCPU; absent: the server's default."`
	MemoryMB   int64             `json:"memory_mb,omitempty" doc:"Memory in MiB; absent: the server's default."`
	Timeout    int64             `json:"timeout,omitempty" doc:"The sandbox's timeout in seconds; absent: the server's default."`
	Ports      []int             `json:"ports" doc:"Ports a client reaches at the sandbox's preview URLs."`
	Env        map[string]string `json:"env" doc:"Environment variables of its sandboxes."`
	Labels     map[string]string `json:"labels" doc:"Metadata of its sandboxes."`
	Egress     *Egress           `json:"egress,omitempty" doc:"The outbound policy of its sandboxes; absent: the template's default, else the server's."`
}

// RuntimeList is a page of a workspace's runtimes, oldest first.
type RuntimeList struct {
	Items      []Runtime `json:"items"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// UpdateRuntimeRequest is the body of PATCH …/runtimes/{runtime_id}: the
// fields given replace the runtime's configuration; the next start uses it.
type UpdateRuntimeRequest struct {
	TemplateID *string            `json:"template_id,omitempty"`
	CPU        *float64           `json:"cpu,omitempty"`
	MemoryMB   *int64             `json:"memory_mb,omitempty"`
	Timeout    *int64             `json:"timeout,omitempty" doc:"Seconds."`
	Ports      *[]int             `json:"ports,omitempty"`
	Env        *map[string]string `json:"env,omitempty"`
	Labels     *map[string]string `json:"labels,omitempty"`
	Egress     *Egress            `json:"egress,omitempty" doc:"Replaces the policy its next sandbox is made with; a running sandbox keeps its own (PUT …/sandboxes/{id}/egress changes that)."`
}

// StartRuntimeRequest is the body of POST …/runtimes/{runtime_id}/start.
type StartRuntimeRequest struct {
	SecretIDs                    []string `json:"secret_ids,omitempty" doc:"Secrets (the org's, or the calling member's own) put in the new sandbox's environment under their names, over the runtime's env. Only this start gets them."`
	RequestedRuntimeLimitSeconds *int64   `json:"requested_runtime_limit_seconds,omitempty" doc:"The sandbox's timeout in seconds for this start; absent: the runtime's configured timeout."`
}

// KeepaliveRuntimeRequest is the body of POST …/runtimes/{runtime_id}/keepalive.
type KeepaliveRuntimeRequest struct {
	ExtendSeconds *int64 `json:"extend_seconds,omitempty" doc:"Keep the running sandbox alive at least this many seconds from now; it never shortens. Absent: the runtime's configured timeout (or the server's default)."`
}
