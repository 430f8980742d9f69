package sbx

import (
	"time"
)

// Secret is a named value kept for an org: an org-level one (UserID empty)
// that any runtime start of the org may use, or a user-level one that only
// starts by that member may. Its value is write-only: the ledger keeps it
// sealed and hands it out only as a sandbox's environment, so Secret never
// carries it.
type Secret struct {
	ID        string
	OrgID     string
	UserID    string // the member it belongs to; empty: org-level
	Name      string // the environment variable it becomes
	CreatedAt time.Time
	UpdatedAt time.Time // when its value was last set
}

// Scope is "org" for an org-level secret, "user" for a member's own.
func (s Secret) Scope() string {
	if s.UserID == "" {
		return SecretScopeOrg
	}
	return SecretScopeUser
}

// The scopes of a secret.
const (
	SecretScopeOrg  = "org"
	SecretScopeUser = "user"
)

// Limits of secrets.
const (
	MaxSecretNameBytes  = 128
	MaxSecretValueBytes = MaxEnvValueBytes // a secret becomes an environment variable
	MaxSecretsPerScope  = 100              // an org's own, and each member's own in the org
)

// CheckSecret refuses a secret whose name could not be an environment
// variable's or whose value is empty, longer than MaxSecretValueBytes or
// holds a NUL byte (EnvValueProblem: what an environment variable's value
// may not be); the error names each bad field.
func CheckSecret(name, value string) error {
	var p Problems
	switch {
	case EnvNameProblem(name) != "":
		p.Add("name", "name: %s", EnvNameProblem(name))
	case len(name) > MaxSecretNameBytes:
		p.Add("name", "name is longer than %d bytes", MaxSecretNameBytes)
	}
	if value == "" {
		p.Add("value", "value is required and may not be empty")
	} else if problem := EnvValueProblem(value); problem != "" {
		p.Add("value", "value %s", problem)
	}
	return p.Err()
}

// cut shortens s for a message.
func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Session is an agent's session on a runtime: a record that names the
// runtime, never a sandbox, so it outlives every sandbox the runtime starts,
// with a transcript of messages clients append to.
type Session struct {
	ID          string
	OrgID       string
	WorkspaceID string
	RuntimeID   string
	Title       string
	CreatedBy   string // the user ID of the member whose key made it; for a key that acts for no user, the key's ID
	CreatedAt   time.Time
	UpdatedAt   time.Time // when it was made or last appended to
}

// SessionMessage is one message of a session's transcript. Seq numbers a
// session's messages from 1, in the order they were appended.
type SessionMessage struct {
	Seq       int64
	Role      string // one of SessionRoles
	Content   string
	CreatedAt time.Time
}

// Limits of sessions.
const (
	MaxSessionTitleBytes   = 256
	MaxSessionMessageBytes = 256 << 10 // one message's content
	MaxSessionAppend       = 100       // messages appended at once
)

// SessionRoles are who a session message may come from.
var SessionRoles = []string{"user", "assistant", "system", "tool"}

// ValidSessionRole reports whether role is one of SessionRoles.
func ValidSessionRole(role string) bool {
	for _, r := range SessionRoles {
		if role == r {
			return true
		}
	}
	return false
}
