package tenancy

import (
	"context"
	"strings"

	"github.com/sbxdev/sbx"
)

// An org's API keys. Everyone in the org lists them (never their secrets);
// who may make or revoke one is authz.Policy.ManageKey: an admin only keys
// that reach no workspace it does not administer, with no role above its
// own there; only owners keys that act as owners. The policy's reads and
// the write are one transaction (Store.Atomically): a role taken away
// meanwhile either comes after the key or refuses it.

// KeySpec is a key to make: org-wide (no User, no ProjectID), a member's
// or a project's.
type KeySpec struct {
	Name      string // required, to tell the key apart
	User      string // a member's ID or email: the key acts as that member
	ProjectID string // the key acts in this project only, as a member
}

// Keys lists the keys of c's org.
func (s *Service) Keys(ctx context.Context, c sbx.Caller, p sbx.Page) ([]sbx.APIKey, string, error) {
	return s.store.APIKeys(ctx, c.Org.ID, p)
}

// CreateKey makes a key in c's org and answers it with its secret, which is
// shown only this once.
func (s *Service) CreateKey(ctx context.Context, c sbx.Caller, spec KeySpec) (sbx.APIKey, string, error) {
	var p sbx.Problems
	name := strings.TrimSpace(spec.Name)
	if name == "" || len(name) > 100 {
		p.Add("name", "name is required, at most 100 bytes, to tell the key apart (for example \"ci\")")
	}
	if spec.User != "" && spec.ProjectID != "" {
		p.Add("user", "a key is a member's (user) or a project's (project_id), not both")
	}
	if err := p.Err(); err != nil {
		return sbx.APIKey{}, "", err
	}
	k := sbx.APIKey{OrgID: c.Org.ID, Name: name, ProjectID: spec.ProjectID}
	var out sbx.APIKey
	var secret string
	err := s.store.Atomically(ctx, func(ctx context.Context) error {
		if spec.User != "" {
			u, err := s.store.GetUser(ctx, spec.User)
			if err != nil {
				return err
			}
			k.UserID = u.ID
		}
		if err := s.policy.ManageKey(ctx, c, k, "making"); err != nil {
			return err
		}
		made, sec, err := s.store.CreateAPIKey(ctx, k, s.clock.Now())
		if err == nil { // never k itself: on PostgreSQL the function may run again
			out, secret = made, sec
		}
		return err
	})
	if err != nil {
		return sbx.APIKey{}, "", err
	}
	return out, secret, nil
}

// RevokeKey ends a key of c's org (by ID) at once.
func (s *Service) RevokeKey(ctx context.Context, c sbx.Caller, id string) (k sbx.APIKey, err error) {
	err = s.store.Atomically(ctx, func(ctx context.Context) error {
		k, err = s.store.GetAPIKey(ctx, c.Org.ID, id)
		if err == nil {
			err = s.policy.ManageKey(ctx, c, k, "revoking")
		}
		if err == nil {
			k, err = s.store.RevokeAPIKey(ctx, c.Org.ID, k.ID, s.clock.Now())
		}
		return err
	})
	if err != nil {
		return sbx.APIKey{}, err
	}
	return k, nil
}
