package apiv1

import "time"

// SSH: public keys registered to a member or a project, which the SSH
// gateway (`ssh -p 2222 SANDBOX_ID@HOST`) lets into the sandboxes an API
// key of that member or project reaches, and short-lived tokens for one
// sandbox, which the gateway takes as the password.

// SSHKey is a registered public key.
type SSHKey struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Scope       string    `json:"scope" enum:"member,project" doc:"member: acts as the member (user_id), with their role; project: acts in one project (project_id), as a member. As an API key of that member or project would."`
	UserID      string    `json:"user_id,omitempty"`
	ProjectID   string    `json:"project_id,omitempty"`
	Type        string    `json:"type" doc:"The key's algorithm, e.g. ssh-ed25519."`
	Fingerprint string    `json:"fingerprint" doc:"SHA256:…, as ssh-keygen -l shows it."`
	PublicKey   string    `json:"public_key" doc:"The key in authorized_keys form, without its comment."`
	CreatedAt   time.Time `json:"created_at"`
}

// SSHKeyList is a page of an org's SSH keys, oldest first.
type SSHKeyList struct {
	Items      []SSHKey `json:"items"`
	NextCursor string   `json:"next_cursor,omitempty"`
}

// AddSSHKeyRequest is the body of POST /api/v1/org/{org}/ssh-keys.
type AddSSHKeyRequest struct {
	PublicKey string `json:"public_key" doc:"One line of a .pub file: ssh-ed25519, ecdsa-sha2-nistp256/384/521, sk-… or ssh-rsa of at least 2048 bits, with an optional comment; no options, no certificates."`
	Name      string `json:"name,omitempty" doc:"At most 100 bytes; default the key's comment."`
	User      string `json:"user,omitempty" doc:"A member's ID or email: the key acts as that member. Default, with no project_id: the member a member's key acts as, or the project of a project's key."`
	ProjectID string `json:"project_id,omitempty" doc:"The key acts in this project only, as a member."`
}

// SSHAccessRequest is the body of POST /api/v1/sandboxes/{id}/ssh.
type SSHAccessRequest struct {
	ExpiresIn *int64 `json:"expires_in,omitempty" minimum:"5" maximum:"3600" doc:"Seconds the token opens the sandbox for; default 300."`
}

// SSHAccess is how to reach a sandbox through the SSH gateway: a user name,
// the gateway's address and host key, and a token to give as the password.
type SSHAccess struct {
	User       string    `json:"user" doc:"The SSH user name: the sandbox's provider sandbox ID."`
	Host       string    `json:"host"`
	Port       int       `json:"port"`
	Token      string    `json:"token" doc:"Shown once: the password (or the answer to the gateway's one keyboard-interactive question) that opens this sandbox, as the API key that made it, until expires_at. A connection it opened outlives it."`
	ExpiresAt  time.Time `json:"expires_at"`
	KnownHosts string    `json:"known_hosts" doc:"The gateway's host key as a known_hosts line, to check the server against."`
	Command    string    `json:"command" doc:"An ssh command line that opens a shell in the sandbox; it asks for the token."`
}
