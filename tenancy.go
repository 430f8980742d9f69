package sbx

import "time"

// Org is the billing and isolation boundary: a caller sees only its org.
type Org struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// Workspace groups projects inside an org.
type Workspace struct {
	ID        string
	OrgID     string
	Name      string
	CreatedAt time.Time
}

// Project owns sandboxes.
type Project struct {
	ID          string
	OrgID       string
	WorkspaceID string
	Name        string
	CreatedAt   time.Time
}

// APIKey is a credential; the ledger keeps only the SHA-256 of its secret.
type APIKey struct {
	ID        string
	OrgID     string
	ProjectID string // empty: the key acts on the whole org
	Name      string
	Prefix    string // the first characters of the secret, to recognise it
	Operator  bool   // acts for the operator of this sbx: credits, rates, verification of any org
	CreatedAt time.Time
}

// Caller is who an authenticated request acts for.
type Caller struct {
	Key       APIKey
	Org       Org
	Workspace Workspace
	Project   Project // the key's project, or the org's default project
}

// OrgWide reports whether the caller's key is scoped to the whole org.
func (c Caller) OrgWide() bool { return c.Key.ProjectID == "" }
