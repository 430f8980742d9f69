package sbx

import "time"

// Pool is a template's warm pool: sandboxes of the template kept running,
// idle, in the project of the operator who set it (who pays for them while
// they wait, at the paused-storage rate), refilled to MinReady (never past
// MaxReady). A create of the
// template whose options a member can honour checks one out: it becomes an
// ordinary sandbox of the caller's project, with the caller's env, token,
// timeout, metadata and egress policy, and is never returned to the pool.
type Pool struct {
	TemplateID  string
	OrgID       string // the owner of the members while they wait
	WorkspaceID string
	ProjectID   string
	MinReady    int
	MaxReady    int
	Resources   Resources // the members' size: a create asking another goes cold
	UpdatedAt   time.Time
}

// PoolMode is how a create uses its template's warm pool.
type PoolMode string

// The pool modes: prefer (the default) checks out a ready member if there
// is one, else creates cold; require fails with warm_pool_unavailable
// unless a member is checked out; bypass never uses the pool.
const (
	PoolPrefer  PoolMode = "prefer"
	PoolRequire PoolMode = "require"
	PoolBypass  PoolMode = "bypass"
)

// PoolCount is how many members a pool has, by state.
type PoolCount struct {
	Ready    int // running, idle: a checkout takes one
	Starting int
}
