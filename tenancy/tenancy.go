// Package tenancy is sbx's tenancy service: orgs (the operator's: their
// making, plans and verification, and the KYC webhook's effect),
// workspaces, projects, members and API keys. Every surface (the REST API
// today; the console, SSH gateway and compatibility APIs after it) calls it
// with the caller it authenticated, so that none applies tenancy rules of
// its own: it checks its arguments (names, roles, limits), fills defaults,
// asks package authz's policy who may do what, and calls the ledger through
// Store. Errors are *sbx.Error.
package tenancy

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/lifecycle"
)

// Store is what the service reads and writes of the ledger; *ledger.Store
// satisfies it.
type Store interface {
	authz.Store // what the policy reads: memberships, projects, workspaces

	// Atomically runs fn in one ledger transaction: the reads and writes
	// fn makes with the context it is given (ledger.Store.Atomically).
	Atomically(ctx context.Context, fn func(ctx context.Context) error) error

	Authenticate(ctx context.Context, secret string) (sbx.Caller, error)

	Orgs(ctx context.Context, p sbx.Page) ([]sbx.Org, string, error)
	CreateOrgWith(ctx context.Context, n sbx.NewOrg, now time.Time) (sbx.CreatedOrg, error)
	SetOrgKYC(ctx context.Context, ref string, status sbx.KYCStatus, at time.Time, ifLater bool) (o sbx.Org, applied bool, err error)
	SetUserKYC(ctx context.Context, ref string, status sbx.KYCStatus, at time.Time, ifLater bool) (u sbx.User, applied bool, err error)

	Workspaces(ctx context.Context, orgID string, reach sbx.Reach, p sbx.Page) ([]sbx.Workspace, string, error)
	CreateWorkspace(ctx context.Context, orgID, name, creatorID string, role sbx.Role, now time.Time) (sbx.Workspace, sbx.Project, error)
	WorkspaceProjects(ctx context.Context, orgID, workspaceID string, reach sbx.Reach, p sbx.Page) ([]sbx.Project, string, error)
	CreateProject(ctx context.Context, orgID, workspaceID, name string, now time.Time) (sbx.Project, sbx.Runtime, error)

	Members(ctx context.Context, orgID, workspaceID string, p sbx.Page) ([]sbx.Member, string, error)
	GetMember(ctx context.Context, orgID, workspaceID, ref string) (sbx.Member, error)
	GetUser(ctx context.Context, ref string) (sbx.User, error)

	APIKeys(ctx context.Context, orgID string, p sbx.Page) ([]sbx.APIKey, string, error)
	CreateAPIKey(ctx context.Context, k sbx.APIKey, now time.Time) (sbx.APIKey, string, error)
	GetAPIKey(ctx context.Context, orgID, id string) (sbx.APIKey, error)
	RevokeAPIKey(ctx context.Context, orgID, id string, now time.Time) (sbx.APIKey, error)
}

// Compute is what a change of members or of a plan does to the compute the
// plan bounds (*lifecycle.Members): a workspace over its member limit has
// its sandboxes paused, one back within it has them resumed.
type Compute interface {
	AddMember(ctx context.Context, orgID, workspace, email, name string, role sbx.Role) (lifecycle.MemberChange, error)
	RemoveMember(ctx context.Context, orgID, workspace, user string) (lifecycle.MemberChange, error)
	SetPlan(ctx context.Context, org string, plan sbx.Plan) (sbx.Org, []sbx.Sandbox, []sbx.Sandbox, error)
}

// Service is the tenancy service.
type Service struct {
	store   Store
	policy  authz.Policy
	clock   sbx.Clock
	compute Compute
}

// New returns the service over store, deciding with policy, changing
// compute through compute.
func New(store Store, policy authz.Policy, clock sbx.Clock, compute Compute) *Service {
	return &Service{store: store, policy: policy, clock: clock, compute: compute}
}

// Authenticate answers who an API key's secret acts for; a secret that is
// no working key is unauthorized.
func (s *Service) Authenticate(ctx context.Context, secret string) (sbx.Caller, error) {
	return s.store.Authenticate(ctx, secret)
}

// inOrg refuses a workspace outside c's org as not found.
func inOrg(c sbx.Caller, ws sbx.Workspace) error {
	if ws.OrgID == c.Org.ID {
		return nil
	}
	return sbx.Errorf(sbx.ENotFound, "workspace %s not found", ws.ID)
}
