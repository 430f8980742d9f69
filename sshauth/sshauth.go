// Package sshauth is sbx's SSH credentials service: public keys registered
// to a member of an org or to a project, and short-lived tokens that open
// one sandbox. Every surface calls it with the caller it authenticated (the
// REST API registers, lists and removes keys and mints tokens), and the SSH
// gateway asks it who a public key or a token acts for in a sandbox. It
// decides no tenancy of its own: an SSH key acts exactly as an API key of
// its member or project (sbx.SSHKey.Acts), who may register one is package
// authz's ManageSSHKey, and whether a caller reaches a sandbox is the
// sandbox service's Get, the one every API route asks. Errors are
// *sbx.Error.
package sshauth

import (
	"context"
	"crypto/rsa"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/internal/strictjson"
	"golang.org/x/crypto/ssh"
)

// Store is what the service reads and writes of the ledger; *ledger.Store
// satisfies it.
type Store interface {
	authz.Store // what the policy reads: memberships, projects, workspaces

	// Atomically runs fn in one ledger transaction (ledger.Store.Atomically).
	Atomically(ctx context.Context, fn func(ctx context.Context) error) error

	GetUser(ctx context.Context, ref string) (sbx.User, error)
	GetAPIKey(ctx context.Context, orgID, id string) (sbx.APIKey, error)
	CallerOf(ctx context.Context, k sbx.APIKey) (sbx.Caller, error)

	CreateSSHKey(ctx context.Context, k sbx.SSHKey, now time.Time) (sbx.SSHKey, error)
	SSHKeys(ctx context.Context, orgID string, p sbx.Page) ([]sbx.SSHKey, string, error)
	GetSSHKey(ctx context.Context, orgID, ref string) (sbx.SSHKey, error)
	DeleteSSHKey(ctx context.Context, orgID, id string) (sbx.SSHKey, error)
	SSHKeysByFingerprint(ctx context.Context, fingerprint string) ([]sbx.SSHKey, error)

	CreateSSHToken(ctx context.Context, t sbx.SSHToken, now time.Time) (sbx.SSHToken, string, error)
	SSHToken(ctx context.Context, secret string) (sbx.SSHToken, error)
}

// Sandboxes finds a sandbox as a caller may see it (*lifecycle.Manager):
// one the caller does not reach is not found.
type Sandboxes interface {
	Get(ctx context.Context, c sbx.Caller, ref string) (sbx.Sandbox, error)
}

// Service is the SSH credentials service.
type Service struct {
	store     Store
	policy    authz.Policy
	sandboxes Sandboxes
	clock     sbx.Clock
}

// New returns the service over store, deciding with policy, finding
// sandboxes through sandboxes.
func New(store Store, policy authz.Policy, sandboxes Sandboxes, clock sbx.Clock) *Service {
	return &Service{store: store, policy: policy, sandboxes: sandboxes, clock: clock}
}

// Token lifetimes: what a mint without one gets, and the bounds of one asked for.
const (
	DefaultTokenTTL = 5 * time.Minute
	MinTokenTTL     = 5 * time.Second
	MaxTokenTTL     = time.Hour
)

// KeySpec is a public key to register: a member's (User, or neither: the
// caller's own member or project) or a project's (ProjectID).
type KeySpec struct {
	PublicKey string // one line of authorized_keys form: TYPE BASE64 [COMMENT], no options
	Name      string // default: the key's comment
	User      string // a member's ID or email: the key acts as that member
	ProjectID string // the key acts in this project only, as a member
}

// AddKey registers a public key in c's org. Without User or ProjectID it is
// the caller's own: its member's for a member's key, its project's for a
// project's key (an org-wide key acts for no member and must name one).
func (s *Service) AddKey(ctx context.Context, c sbx.Caller, spec KeySpec) (sbx.SSHKey, error) {
	var p sbx.Problems
	pub, comment, err := ParseKey(spec.PublicKey)
	if err != nil {
		p.Add("public_key", "%s", err.Error())
	}
	name := strings.TrimSpace(spec.Name)
	if name == "" {
		name = strings.TrimSpace(comment)
	}
	if name == "" || len(name) > 100 || strings.ContainsAny(name, "\x00\r\n") {
		p.Add("name", "name is required (else the key's comment), one line of at most 100 bytes, to tell the key apart")
	}
	if spec.User != "" && spec.ProjectID != "" {
		p.Add("user", "an SSH key is a member's (user) or a project's (project_id), not both")
	}
	if spec.User == "" && spec.ProjectID == "" && c.Key.Scope() == "org" {
		p.Add("project_id", "an org-wide API key acts for no member: name the project (project_id) or the member (user) the SSH key acts as")
	}
	if err := p.Err(); err != nil {
		return sbx.SSHKey{}, err
	}
	k := sbx.SSHKey{OrgID: c.Org.ID, Name: name, Type: pub.Type(), Fingerprint: ssh.FingerprintSHA256(pub),
		PublicKey: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))),
		ProjectID: spec.ProjectID, CreatedBy: c.Key.ID}
	var out sbx.SSHKey
	if spec.User == "" && spec.ProjectID == "" {
		k.UserID, k.ProjectID = c.Key.UserID, c.Key.ProjectID
	}
	err = s.store.Atomically(ctx, func(ctx context.Context) error {
		if spec.User != "" {
			u, err := s.store.GetUser(ctx, spec.User)
			if err != nil {
				return err
			}
			k.UserID = u.ID
			ms, err := s.store.Memberships(ctx, c.Org.ID, u.ID)
			if err != nil {
				return err
			}
			if len(ms) == 0 {
				return sbx.Errorf(sbx.ENotFound, "user %s is not a member of this org", spec.User)
			}
		}
		if k.ProjectID != "" {
			if _, err := s.store.GetProject(ctx, c.Org.ID, k.ProjectID); err != nil {
				return err
			}
		}
		if err := s.policy.ManageSSHKey(ctx, c, k, "registering"); err != nil {
			return err
		}
		made, err := s.store.CreateSSHKey(ctx, k, s.clock.Now())
		if err == nil { // never k itself: on PostgreSQL the function may run again
			out = made
		}
		return err
	})
	if err != nil {
		return sbx.SSHKey{}, err
	}
	return out, nil
}

// Keys lists a page of the SSH keys of c's org: everyone in the org lists
// them, as the org's API keys (their public halves only).
func (s *Service) Keys(ctx context.Context, c sbx.Caller, p sbx.Page) ([]sbx.SSHKey, string, error) {
	return s.store.SSHKeys(ctx, c.Org.ID, p)
}

// RemoveKey removes an SSH key of c's org, by ID or fingerprint, for
// whoever may register it; connections it opened stay open.
func (s *Service) RemoveKey(ctx context.Context, c sbx.Caller, ref string) (k sbx.SSHKey, err error) {
	err = s.store.Atomically(ctx, func(ctx context.Context) error {
		k, err = s.store.GetSSHKey(ctx, c.Org.ID, ref)
		if err == nil {
			err = s.policy.ManageSSHKey(ctx, c, k, "removing")
		}
		if err == nil {
			k, err = s.store.DeleteSSHKey(ctx, c.Org.ID, k.ID)
		}
		return err
	})
	if err != nil {
		return sbx.SSHKey{}, err
	}
	return k, nil
}

// MintToken makes a token that opens sandbox ref through the SSH gateway,
// as c, until ttl from now (0: DefaultTokenTTL), for a caller who reaches
// the sandbox; it answers the token, its secret (shown once) and the
// sandbox.
func (s *Service) MintToken(ctx context.Context, c sbx.Caller, ref string, ttl time.Duration) (sbx.SSHToken, string, sbx.Sandbox, error) {
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < MinTokenTTL || ttl > MaxTokenTTL {
		return sbx.SSHToken{}, "", sbx.Sandbox{}, sbx.Invalid("expires_in", "expires_in must be from %d to %d seconds", int(MinTokenTTL/time.Second), int(MaxTokenTTL/time.Second))
	}
	sb, err := s.sandboxes.Get(ctx, c, ref)
	if err != nil {
		return sbx.SSHToken{}, "", sbx.Sandbox{}, err
	}
	if sb.State == sbx.StateKilled || sb.State == sbx.StateFailed {
		return sbx.SSHToken{}, "", sbx.Sandbox{}, sbx.Errorf(sbx.EConflict, "sandbox %s is %s: there is nothing to reach over SSH", sb.ProviderSandboxID, sb.State)
	}
	now := s.clock.Now()
	t, secret, err := s.store.CreateSSHToken(ctx, sbx.SSHToken{OrgID: c.Org.ID, SandboxID: sb.ID, KeyID: c.Key.ID, ExpiresAt: now.Add(ttl)}, now)
	if err != nil {
		return sbx.SSHToken{}, "", sbx.Sandbox{}, err
	}
	return t, secret, sb, nil
}

// denied is the one answer to a credential that does not open a sandbox,
// whatever the reason: no such sandbox, another org's, a key registered
// nowhere or one that does not reach it, a wrong or expired token.
func denied() error {
	return sbx.Errorf(sbx.EUnauthorized, "this credential does not open that sandbox")
}

// ByKey answers who public key pub acts for in sandbox ref, and its
// registration: the registration whose member or project reaches the
// sandbox (a key is registered at most once per org, and a sandbox is in
// one). Anything else is unauthorized, alike.
func (s *Service) ByKey(ctx context.Context, pub ssh.PublicKey, ref string) (sbx.Caller, sbx.SSHKey, error) {
	keys, err := s.store.SSHKeysByFingerprint(ctx, ssh.FingerprintSHA256(pub))
	if err != nil {
		return sbx.Caller{}, sbx.SSHKey{}, err
	}
	wire := string(pub.Marshal())
	for _, k := range keys {
		if registered, _, err := ParseKey(k.PublicKey); err != nil || string(registered.Marshal()) != wire {
			continue
		}
		c, _, err := s.reach(ctx, k.Acts(), ref)
		switch {
		case err == nil:
			return c, k, nil
		case sbx.ErrorCode(err) != sbx.EUnauthorized:
			return sbx.Caller{}, sbx.SSHKey{}, err
		}
	}
	return sbx.Caller{}, sbx.SSHKey{}, denied()
}

// ByToken answers who token secret acts for in sandbox ref: the API key
// that made it, while that key works, the token has not expired and ref
// names the sandbox it was made for.
func (s *Service) ByToken(ctx context.Context, secret, ref string) (sbx.Caller, sbx.SSHToken, error) {
	t, err := s.store.SSHToken(ctx, secret)
	if sbx.ErrorCode(err) == sbx.EUnauthorized || (err == nil && !s.clock.Now().Before(t.ExpiresAt)) {
		return sbx.Caller{}, sbx.SSHToken{}, denied()
	}
	if err != nil {
		return sbx.Caller{}, sbx.SSHToken{}, err
	}
	k, err := s.store.GetAPIKey(ctx, t.OrgID, t.KeyID)
	if sbx.ErrorCode(err) == sbx.ENotFound || (err == nil && !k.RevokedAt.IsZero()) {
		return sbx.Caller{}, sbx.SSHToken{}, denied()
	}
	if err != nil {
		return sbx.Caller{}, sbx.SSHToken{}, err
	}
	c, sb, err := s.reach(ctx, k, ref)
	if err != nil {
		return sbx.Caller{}, sbx.SSHToken{}, err
	}
	if sb.ID != t.SandboxID {
		return sbx.Caller{}, sbx.SSHToken{}, denied()
	}
	return c, t, nil
}

// reach is the caller key k acts for and sandbox ref, when the caller
// reaches it; otherwise unauthorized (a store's failure is passed on).
func (s *Service) reach(ctx context.Context, k sbx.APIKey, ref string) (sbx.Caller, sbx.Sandbox, error) {
	c, err := s.store.CallerOf(ctx, k)
	if sbx.ErrorCode(err) == sbx.EUnauthorized || sbx.ErrorCode(err) == sbx.ENotFound {
		return sbx.Caller{}, sbx.Sandbox{}, denied()
	}
	if err != nil {
		return sbx.Caller{}, sbx.Sandbox{}, err
	}
	sb, err := s.sandboxes.Get(ctx, c, ref)
	if sbx.ErrorCode(err) == sbx.ENotFound || sbx.ErrorCode(err) == sbx.EInvalid {
		return sbx.Caller{}, sbx.Sandbox{}, denied()
	}
	if err != nil {
		return sbx.Caller{}, sbx.Sandbox{}, err
	}
	return c, sb, nil
}

// keyTypes are the public key algorithms a key may have: no DSA, no
// certificates.
var keyTypes = map[string]bool{
	ssh.KeyAlgoED25519: true, ssh.KeyAlgoECDSA256: true, ssh.KeyAlgoECDSA384: true, ssh.KeyAlgoECDSA521: true,
	ssh.KeyAlgoRSA: true, ssh.KeyAlgoSKED25519: true, ssh.KeyAlgoSKECDSA256: true,
}

// minRSABits is the smallest RSA key accepted.
const minRSABits = 2048

// maxKeyText bounds the text of one public key.
const maxKeyText = 16 << 10

// ParseKey parses one public key in authorized_keys form (TYPE BASE64
// [COMMENT], as ssh-keygen writes a .pub file) and answers it and its
// comment; options, several keys, certificates, DSA and RSA keys under 2048
// bits are refused, with why.
func ParseKey(text string) (ssh.PublicKey, string, error) {
	if len(text) > maxKeyText {
		return nil, "", sbx.Errorf(sbx.EInvalid, "a public key is at most %d bytes; this is %d", maxKeyText, len(text))
	}
	if strings.TrimSpace(text) == "" {
		return nil, "", sbx.Errorf(sbx.EInvalid, "public_key is required: one line as in a .pub file (ssh-ed25519 AAAA… comment)")
	}
	pub, comment, options, rest, err := ssh.ParseAuthorizedKey([]byte(text))
	switch {
	case err != nil:
		return nil, "", sbx.Errorf(sbx.EInvalid, "not a public key in authorized_keys form (ssh-ed25519 AAAA… comment): %v", err)
	case len(options) > 0:
		return nil, "", sbx.Errorf(sbx.EInvalid, "a registered key takes no authorized_keys options (%s)", strictjson.Short(strings.Join(options, ",")))
	case strings.TrimSpace(string(rest)) != "":
		return nil, "", sbx.Errorf(sbx.EInvalid, "one public key at a time, please")
	case !keyTypes[pub.Type()]:
		return nil, "", sbx.Errorf(sbx.EInvalid, "key type %s is not accepted; use ssh-ed25519, ecdsa-sha2-nistp256/384/521, an RSA key of at least %d bits, or a security key (sk-…)", strictjson.Short(pub.Type()), minRSABits)
	}
	if ck, ok := pub.(ssh.CryptoPublicKey); ok {
		if rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey); ok && rk.N.BitLen() < minRSABits {
			return nil, "", sbx.Errorf(sbx.EInvalid, "an RSA key of %d bits is too weak; use at least %d bits, or ssh-ed25519", rk.N.BitLen(), minRSABits)
		}
	}
	return pub, comment, nil
}
