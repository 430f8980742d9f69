package apiv1

import "time"

// Secrets: named values of an org, or of one member of it, that a runtime's
// start puts in its sandbox's environment. Values are write-only: no answer
// carries one.

// Secret describes a secret, never its value.
type Secret struct {
	ID        string    `json:"id"`
	Name      string    `json:"name" doc:"The environment variable it becomes in a sandbox."`
	Scope     string    `json:"scope" enum:"org,user" doc:"org: the org's, for any start in the org; user: one member's own, for starts by that member's keys only."`
	UserID    string    `json:"user_id,omitempty" doc:"The member a user secret belongs to."`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at" doc:"When its value was last set."`
}

// SecretList is the secrets a key sees: the org's and, for a member's key,
// the member's own, by name. It comes whole: a scope holds at most 100.
type SecretList struct {
	Items []Secret `json:"items"`
}

// SetSecretRequest is the body of POST /api/v1/org/{org}/secrets: it makes
// the secret, or gives the one of that name in that scope a new value.
type SetSecretRequest struct {
	Name  string `json:"name" pattern:"^[A-Za-z_][A-Za-z0-9_]*$" doc:"An environment variable's name, at most 128 bytes."`
	Value string `json:"value" doc:"1 to 32768 bytes, no NUL. Write-only: it is sealed at rest and never returned."`
	Scope string `json:"scope,omitempty" enum:"org,user" doc:"org (the default; owners and admins) or user (the member the key acts as; a member's key only)."`
}
