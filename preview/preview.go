// Package preview is the application service behind preview URLs: who
// reaches which port of which sandbox from outside, and what that traffic
// does to a paused sandbox. Every surface that carries preview traffic
// (serve's preview hosts and /api/v1/sandboxes/{id}/ports/{port}/…; the
// SSH gateway's forwarding asks lifecycle directly, as an API caller) asks
// Open, and the links API makes and revokes links through it.
//
// The rules:
//   - ports 22 and 49983 are never reached through a preview
//     (sbx.PreviewPortReserved);
//   - a sandbox that does not exist, or has ended, is not found;
//   - a public preview is open to anyone with its URL; a private one
//     (the default) takes the sandbox's traffic token
//     (sbx.Sandbox.TrafficToken), a working preview link of that port, or
//     an API key that reaches the sandbox (the same rule as every other
//     call: lifecycle.Manager.Get);
//   - a paused sandbox is woken by the traffic unless its preview says
//     not to (sbx.Preview.NoWake), and then the answer is a 409 with
//     Retry-After.
package preview

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// Link lifetimes: by default an hour, at most a week.
const (
	DefaultLinkTTL = time.Hour
	MaxLinkTTL     = 7 * 24 * time.Hour
)

// linkPrefix begins every preview link's token, which is
// linkPrefix + ID + "_" + secret.
const linkPrefix = "sbl_"

// Store is what the service reads and writes of the ledger; *ledger.Store
// satisfies it.
type Store interface {
	InsertPreviewLink(ctx context.Context, l sbx.PreviewLink, secret string) error
	PreviewLink(ctx context.Context, id, secret string) (sbx.PreviewLink, error)
	PreviewLinks(ctx context.Context, sandboxID string) ([]sbx.PreviewLink, error)
	RevokePreviewLink(ctx context.Context, sandboxID, id string, now time.Time) (sbx.PreviewLink, error)
}

// Sandboxes is what the service asks of lifecycle; *lifecycle.Manager
// satisfies it.
type Sandboxes interface {
	Get(ctx context.Context, c sbx.Caller, ref string) (sbx.Sandbox, error)
	Sees(ctx context.Context, c sbx.Caller, sb sbx.Sandbox, ref string) error
	Reach(ctx context.Context, ref, why string, check func(sbx.Sandbox) (wake bool, err error)) (*lifecycle.AgentConn, error)
}

// Service opens preview traffic and keeps preview links.
type Service struct {
	store     Store
	sandboxes Sandboxes
	clock     sbx.Clock
}

// New returns the service.
func New(store Store, sandboxes Sandboxes, clock sbx.Clock) *Service {
	return &Service{store: store, sandboxes: sandboxes, clock: clock}
}

// Credentials are what a preview request carries: the caller of an API key
// it sent (nil: none) and a token (the traffic token or a link's).
type Credentials struct {
	Caller     *sbx.Caller
	Token      string
	FromCookie bool // the token came in the preview's cookie
}

// Open lets preview traffic through to port of sandbox ref (its provider
// sandbox ID or sbx UUID), woken when paused and its preview allows: the
// connection's PortAddr(port) is where to send it; Close ends it.
func (s *Service) Open(ctx context.Context, cred Credentials, ref string, port int) (*lifecycle.AgentConn, error) {
	if err := checkPort(port); err != nil {
		return nil, err
	}
	return s.sandboxes.Reach(ctx, ref, "preview traffic to port "+strconv.Itoa(port), func(sb sbx.Sandbox) (bool, error) {
		return !sb.Preview.NoWake, s.authorize(ctx, cred, sb, ref, port)
	})
}

// authorize checks that cred opens port of sandbox sb (named ref).
func (s *Service) authorize(ctx context.Context, cred Credentials, sb sbx.Sandbox, ref string, port int) error {
	if cred.Caller != nil {
		if err := s.sandboxes.Sees(ctx, *cred.Caller, sb, ref); err != nil {
			return err
		}
	}
	switch {
	case sb.State.Final():
		return sbx.Errorf(sbx.ENotFound, "sandbox %s has ended (%s): its previews are gone", ref, sb.State)
	case cred.Caller != nil || sb.Preview.Public:
		return nil
	}
	if t := sb.TrafficToken(); t != "" && subtle.ConstantTimeCompare([]byte(cred.Token), []byte(t)) == 1 {
		return nil
	}
	if id, secret, ok := splitLink(cred.Token); ok {
		l, err := s.store.PreviewLink(ctx, id, secret)
		switch {
		case err != nil && sbx.ErrorCode(err) != sbx.ENotFound:
			return err
		case err == nil && l.SandboxID == sb.ID && l.Port == port && l.Works(s.clock.Now()):
			return nil
		case err == nil && l.SandboxID == sb.ID && l.Port == port:
			return sbx.Errorf(sbx.EUnauthorized, "this preview link has expired or was revoked: ask for a new one (sbx sandbox url %s %d)", sb.ProviderSandboxID, port)
		}
	}
	if cred.Token != "" {
		return sbx.Errorf(sbx.EUnauthorized, "the token does not open port %d of sandbox %s", port, sb.ProviderSandboxID)
	}
	return sbx.Errorf(sbx.EUnauthorized, "the preview of port %d of sandbox %s is private: it needs the sandbox's traffic token (header %s, or ?%s= once in a browser), a preview link, or an API key that reaches the sandbox (X-API-Key)",
		port, sb.ProviderSandboxID, TokenHeader, TokenParam)
}

// TokenHeader and TokenParam carry a traffic or link token on a preview
// request; TokenCookie keeps one in a browser after a TokenParam.
const (
	TokenHeader = "X-Sbx-Traffic-Token"
	TokenParam  = "sbx_token"
	TokenCookie = "sbx_token"
)

// LinkSpec is a preview link to make.
type LinkSpec struct {
	Port    int
	Expires int64 // seconds it works; 0: DefaultLinkTTL
}

// NewLink is a link just made, with its sandbox and its token, which is
// shown only this once.
type NewLink struct {
	sbx.PreviewLink
	Sandbox sbx.Sandbox
	Token   string
}

// CreateLink makes a link to spec.Port of c's sandbox ref.
func (s *Service) CreateLink(ctx context.Context, c sbx.Caller, ref string, spec LinkSpec) (NewLink, error) {
	var p sbx.Problems
	if err := checkPort(spec.Port); err != nil {
		p.Add("port", "%s", sbx.ErrorMessage(err))
	}
	ttl := DefaultLinkTTL
	switch most := int64(MaxLinkTTL / time.Second); {
	case spec.Expires == 0:
	case spec.Expires < 1 || spec.Expires > most:
		p.Add("expires", "expires must be 1 second to %d days", int(MaxLinkTTL/(24*time.Hour)))
	default:
		ttl = time.Duration(spec.Expires) * time.Second
	}
	if err := p.Err(); err != nil {
		return NewLink{}, err
	}
	sb, err := s.sandboxes.Get(ctx, c, ref)
	if err == nil && sb.State.Final() {
		err = sbx.Errorf(sbx.EConflict, "sandbox %s has ended (%s): it has no previews to link to", ref, sb.State)
	}
	if err != nil {
		return NewLink{}, err
	}
	now := s.clock.Now().UTC()
	l := sbx.PreviewLink{ID: rand.Text()[:16], OrgID: sb.OrgID, SandboxID: sb.ID, Port: spec.Port, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	secret := rand.Text()
	if err := s.store.InsertPreviewLink(ctx, l, secret); err != nil {
		return NewLink{}, err
	}
	return NewLink{PreviewLink: l, Sandbox: sb, Token: linkPrefix + l.ID + "_" + secret}, nil
}

// Links lists the links of c's sandbox ref, newest first.
func (s *Service) Links(ctx context.Context, c sbx.Caller, ref string) ([]sbx.PreviewLink, error) {
	sb, err := s.sandboxes.Get(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	return s.store.PreviewLinks(ctx, sb.ID)
}

// RevokeLink ends link id of c's sandbox ref at once.
func (s *Service) RevokeLink(ctx context.Context, c sbx.Caller, ref, id string) (sbx.PreviewLink, error) {
	sb, err := s.sandboxes.Get(ctx, c, ref)
	if err != nil {
		return sbx.PreviewLink{}, err
	}
	return s.store.RevokePreviewLink(ctx, sb.ID, id, s.clock.Now())
}

// checkPort refuses what is not a port a preview reaches.
func checkPort(port int) error {
	switch {
	case !sbx.ValidPort(port):
		return sbx.Invalid("port", "port %d is not a TCP port (1-65535)", port)
	case sbx.PreviewPortReserved(port):
		return sbx.Errorf(sbx.EForbidden, "port %d is never reached through a preview: the agent's port is the runtime URL's, and SSH goes through serve's SSH gateway", port)
	}
	return nil
}

// splitLink splits a link's token into its ID and secret.
func splitLink(token string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(token, linkPrefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "_")
}
