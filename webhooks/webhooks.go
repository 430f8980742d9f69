// Package webhooks is the application service of an org's webhooks: URLs
// that get the org's events (package events) as signed POSTs. Owners and
// admins of the org register, list and remove them, read their
// deliveries and redeliver one (Service); the Dispatcher, in the serve
// leading, queues a delivery for each matching event and sends them with
// retries and backoff, never in the way of the lifecycle.
package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/oci"
)

// Store is what the service reads and writes of the ledger; *ledger.Store
// satisfies it.
type Store interface {
	InsertWebhook(ctx context.Context, w sbx.Webhook, secret string) (sbx.Webhook, error)
	Webhooks(ctx context.Context, orgID string) ([]sbx.Webhook, error)
	DeleteWebhook(ctx context.Context, orgID, id string) (sbx.Webhook, error)
	WebhookDeliveries(ctx context.Context, orgID, webhookID string, state sbx.DeliveryState, limit int) ([]sbx.WebhookDelivery, error)
	Redeliver(ctx context.Context, orgID, webhookID, id string, now time.Time) (sbx.WebhookDelivery, error)
}

// MaxWebhooks is the most webhooks an org registers.
const MaxWebhooks = 20

// Service registers, lists and removes an org's webhooks, and reads and
// redelivers their deliveries.
type Service struct {
	store Store
	clock sbx.Clock
	// private: webhook URLs may name private addresses (the operator's
	// serve --webhook-private), else only public ones.
	private bool
}

// New returns the service over store; private allows URLs at private
// addresses (loopback, the LAN).
func New(store Store, clock sbx.Clock, private bool) *Service {
	return &Service{store: store, clock: clock, private: private}
}

// Spec is what a registration gives.
type Spec struct {
	URL    string
	Types  []string // none: every type
	Secret string   // "": made here
}

// admin refuses callers who may not administer the org's webhooks.
func admin(c sbx.Caller) error { return authz.Need(c, sbx.RoleAdmin, "managing the org's webhooks") }

// Add registers a webhook of c's org and answers it with its secret (the
// given one, or a new whsec_…), which nothing answers again. Every problem
// with the spec is one EInvalid naming each field.
func (s *Service) Add(ctx context.Context, c sbx.Caller, spec Spec) (sbx.Webhook, string, error) {
	if err := admin(c); err != nil {
		return sbx.Webhook{}, "", err
	}
	if err := s.check(spec); err != nil {
		return sbx.Webhook{}, "", err
	}
	list, err := s.store.Webhooks(ctx, c.Org.ID)
	if err != nil {
		return sbx.Webhook{}, "", err
	}
	if len(list) >= MaxWebhooks {
		return sbx.Webhook{}, "", sbx.Errorf(sbx.EConflict, "the org has %d webhooks, the most it may; remove one first", len(list))
	}
	secret := spec.Secret
	if secret == "" {
		secret = newSecret()
	}
	w, err := s.store.InsertWebhook(ctx, sbx.Webhook{OrgID: c.Org.ID, URL: spec.URL, Types: spec.Types, CreatedAt: s.clock.Now()}, secret)
	return w, secret, err
}

// check refuses a spec with a bad field, naming each.
func (s *Service) check(spec Spec) error {
	var p sbx.Problems
	if why := s.urlProblem(spec.URL); why != "" {
		p.Add("url", "%s", why)
	}
	if len(spec.Types) > 50 {
		p.Add("types", "at most 50 types")
	}
	for _, t := range spec.Types {
		if why := sbx.EventTypeProblem(t); why != "" {
			p.Add("types", "type %q: %s", t, why)
		}
	}
	if spec.Secret != "" && (len(spec.Secret) < 16 || len(spec.Secret) > 256) {
		p.Add("secret", "a secret is 16 to 256 bytes (or leave it out and one is made)")
	}
	return p.Err()
}

// urlProblem says what is wrong with a webhook's URL, or "": an absolute
// http or https URL with a host, no user info, at most 2048 bytes; at a
// public address unless private ones are allowed (an address is checked
// here when the URL names one, and as dialled for names).
func (s *Service) urlProblem(raw string) string {
	if raw == "" {
		return "url is required"
	}
	if len(raw) > 2048 {
		return "url is at most 2048 bytes"
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "url is not a URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return "url must be http:// or https://"
	case u.Hostname() == "":
		return "url has no host"
	case u.User != nil:
		return "url must not carry a user or password; sign with the secret instead"
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && !s.private && !oci.Public(a) {
		return "url is at " + a.String() + ", which is not a public address (the operator allows private ones with serve --webhook-private)"
	}
	if strings.EqualFold(u.Hostname(), "localhost") && !s.private {
		return "url is at localhost, which is not a public address (the operator allows private ones with serve --webhook-private)"
	}
	return ""
}

// newSecret makes a webhook's signing secret.
func newSecret() string {
	b := make([]byte, 24)
	rand.Read(b)
	return "whsec_" + hex.EncodeToString(b)
}

// List answers the webhooks of c's org, never their secrets.
func (s *Service) List(ctx context.Context, c sbx.Caller) ([]sbx.Webhook, error) {
	if err := admin(c); err != nil {
		return nil, err
	}
	return s.store.Webhooks(ctx, c.Org.ID)
}

// Remove deletes webhook id of c's org, its deliveries with it, and
// answers what it was; another org's is not found.
func (s *Service) Remove(ctx context.Context, c sbx.Caller, id string) (sbx.Webhook, error) {
	if err := admin(c); err != nil {
		return sbx.Webhook{}, err
	}
	return s.store.DeleteWebhook(ctx, c.Org.ID, id)
}

// Deliveries answers up to limit (1 to 1000; 0: 100) of webhook id's
// deliveries, in state when not "", newest event first.
func (s *Service) Deliveries(ctx context.Context, c sbx.Caller, id string, state sbx.DeliveryState, limit int) ([]sbx.WebhookDelivery, error) {
	if err := admin(c); err != nil {
		return nil, err
	}
	var p sbx.Problems
	if state != "" && !sbx.ValidDeliveryState(state) {
		p.Add("state", "state %q is not one of queued, in_progress, succeeded, dead_letter", state)
	}
	if limit < 0 || limit > 1000 {
		p.Add("limit", "limit is 1 to 1000")
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = 100
	}
	return s.store.WebhookDeliveries(ctx, c.Org.ID, id, state, limit)
}

// Redeliver puts delivery of webhook id back in the queue, due now, with
// a full set of attempts.
func (s *Service) Redeliver(ctx context.Context, c sbx.Caller, id, delivery string) (sbx.WebhookDelivery, error) {
	if err := admin(c); err != nil {
		return sbx.WebhookDelivery{}, err
	}
	return s.store.Redeliver(ctx, c.Org.ID, id, delivery, s.clock.Now())
}

// Sign is the Sbx-Signature header of body sent at t with secret:
// t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>.
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}
