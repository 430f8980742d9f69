// Package secrets is the application service for an org's secrets: named
// values that a runtime's start puts in its sandbox's environment, kept for
// the org or for one member of it. Every surface sets, lists and removes
// them through it, so the rules below hold for all of them.
//
// Values are write-only: nothing here answers one. Everyone in the org lists
// the org's secrets, and a member's key its member's own too; owners and
// admins set and remove the org's; a member's key sets and removes its
// member's own, and any other key asking for a member's own is refused. A
// name given to Delete means the member's own secret before the org's of
// that name, unless the scope says which.
package secrets

import (
	"context"
	"errors"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
)

// Store is what the service reads and writes of the ledger; *ledger.Store
// satisfies it. userID empty means the org's own secrets; a lookup given a
// user also sees that member's own.
type Store interface {
	Secrets(ctx context.Context, orgID, userID string) ([]sbx.Secret, error)
	GetSecret(ctx context.Context, orgID, userID, ref string) (sbx.Secret, error)
	PutSecret(ctx context.Context, orgID, userID, name, value string, now time.Time) (sbx.Secret, bool, error)
	DeleteSecret(ctx context.Context, orgID, userID, ref string) (sbx.Secret, error)
}

// Service sets, lists and removes secrets for callers of the org they are in.
type Service struct {
	store  Store
	policy authz.Policy // secrets are the org's: the caller's org role decides (authz.Need)
	clock  sbx.Clock
}

// New returns the service over store, deciding with policy, timing with clock.
func New(store Store, policy authz.Policy, clock sbx.Clock) *Service {
	return &Service{store: store, policy: policy, clock: clock}
}

// List answers the secrets c sees in its org: the org's and, with a
// member's key, the member's own.
func (s *Service) List(ctx context.Context, c sbx.Caller) ([]sbx.Secret, error) {
	return s.store.Secrets(ctx, c.Org.ID, c.User.ID)
}

// Set gives secret name of scope (sbx.SecretScopeOrg or SecretScopeUser;
// empty: the org's) the value value, making it (created) or replacing the
// value of the one the scope has by that name. Every problem with scope,
// name and value is one EInvalid naming each field, before the caller's
// right to the scope is checked.
func (s *Service) Set(ctx context.Context, c sbx.Caller, scope, name, value string) (sec sbx.Secret, created bool, err error) {
	var p sbx.Problems
	if scope != "" && scope != sbx.SecretScopeOrg && scope != sbx.SecretScopeUser {
		p.Add("scope", "scope %q must be org or user", scope)
	}
	var e *sbx.Error
	if errors.As(sbx.CheckSecret(name, value), &e) {
		p = append(p, e.Fields...)
	}
	if err := p.Err(); err != nil {
		return sec, false, err
	}
	user, err := owner(c, scope, "setting")
	if err != nil {
		return sec, false, err
	}
	return s.store.PutSecret(ctx, c.Org.ID, user, name, value, s.clock.Now())
}

// Delete removes the secret ref names (an ID or a name), value and all, and
// answers what it was. With scope empty a name means the member's own before
// the org's; sbx.SecretScopeOrg looks among the org's only,
// sbx.SecretScopeUser among the member's own only.
func (s *Service) Delete(ctx context.Context, c sbx.Caller, scope, ref string) (sbx.Secret, error) {
	user := c.User.ID // whose own secrets the lookup sees beside the org's
	switch scope {
	case "":
	case sbx.SecretScopeOrg:
		user = ""
	case sbx.SecretScopeUser:
		if _, err := owner(c, scope, "removing"); err != nil {
			return sbx.Secret{}, err
		}
	default:
		return sbx.Secret{}, sbx.Invalid("scope", "scope %q must be org or user", scope)
	}
	sec, err := s.store.GetSecret(ctx, c.Org.ID, user, ref)
	switch {
	case err != nil:
	case scope == sbx.SecretScopeUser && sec.UserID == "":
		err = sbx.Errorf(sbx.ENotFound, "secret %s not found among this member's own", ref)
	case sec.UserID == "":
		err = authz.Need(c, sbx.RoleAdmin, "removing an org secret")
	}
	if err != nil {
		return sbx.Secret{}, err
	}
	return s.store.DeleteSecret(ctx, c.Org.ID, user, sec.ID)
}

// owner checks that c may change secrets of scope (empty: the org's; verb
// names the change) and answers the user ID that scope stands for: empty for
// the org's, c's member for a member's own.
func owner(c sbx.Caller, scope, verb string) (string, error) {
	if scope == sbx.SecretScopeUser {
		if c.User.ID == "" {
			return "", sbx.Errorf(sbx.EForbidden, "%s a user secret needs a member's key: a user secret is the own of the member a key acts as, "+
				"and this key (scope %s) acts for no member", verb, c.Key.Scope())
		}
		return c.User.ID, nil
	}
	return "", authz.Need(c, sbx.RoleAdmin, verb+" an org secret")
}
