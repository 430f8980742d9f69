package sbx

import "time"

// SSHKey is a public key registered to a member of an org or to a project:
// the SSH gateway lets its holder into the sandboxes an API key of that
// member or project reaches, acting as that key would (Acts).
type SSHKey struct {
	ID          string
	OrgID       string
	UserID      string // a member's key: acts as this user, with the user's role
	ProjectID   string // a project's key: acts in this project only, as a member
	Name        string // to tell the key apart
	Type        string // the key's algorithm, as OpenSSH names it: ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, …
	Fingerprint string // SHA256:<base64>, as ssh-keygen -l shows it
	PublicKey   string // the key in authorized_keys form: TYPE BASE64, no options or comment
	CreatedBy   string // the ID of the API key that registered it
	CreatedAt   time.Time
}

// Scope says whose key k is: "member" or "project".
func (k SSHKey) Scope() string {
	if k.UserID != "" {
		return "member"
	}
	return "project"
}

// Acts is the API key k acts as: a member's or a project's key of its org,
// named by k's ID. Authorization treats the SSH key's holder as a holder of
// that API key.
func (k SSHKey) Acts() APIKey {
	return APIKey{ID: k.ID, OrgID: k.OrgID, UserID: k.UserID, ProjectID: k.ProjectID, Name: "ssh key " + k.Name, CreatedAt: k.CreatedAt}
}

// MaxSSHKeysPerScope is how many SSH keys one member or one project of an
// org may have.
const MaxSSHKeysPerScope = 100

// SSHToken is a short-lived password for the SSH gateway: it opens one
// sandbox, as the API key that made it, until it expires. Only its
// SHA-256 is stored.
type SSHToken struct {
	ID        string
	OrgID     string
	SandboxID string // the sbx UUID of the sandbox it opens
	KeyID     string // the API key that made it, as which its holder acts
	CreatedAt time.Time
	ExpiresAt time.Time
}
