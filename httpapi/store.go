package httpapi

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/billing"
	"github.com/sbxdev/sbx/capability"
	"github.com/sbxdev/sbx/observability"
	"github.com/sbxdev/sbx/secrets"
	"github.com/sbxdev/sbx/sessions"
	"github.com/sbxdev/sbx/tenancy"
)

// Store is what the API reads and writes of the ledger, by what it serves;
// *ledger.Store satisfies it. (An application layer under every surface,
// issue 14, takes these over service by service.)
type Store interface {
	tenancy.Store // what the tenancy service reads and writes
	tenancyStore
	billing.Store       // what the wallet reads and writes
	observability.Store // what the summary reads
	runtimesStore
	secrets.Store    // what the secrets service reads and writes
	sessions.Store   // what the sessions service reads and writes
	capability.Store // what the capability service functions read and write
}

// tenancyStore: what the API still reads of orgs and projects itself.
type tenancyStore interface {
	GetOrg(ctx context.Context, ref string) (sbx.Org, error)
	Projects(ctx context.Context, orgID string) ([]sbx.Project, error)
	MemberCounts(ctx context.Context, orgID string) (map[string]sbx.MemberCount, error)
}

// runtimesStore: runtimes, their sandboxes and their capabilities.
type runtimesStore interface {
	Runtime(ctx context.Context, projectID string) (sbx.Runtime, error)
	Runtimes(ctx context.Context, orgID, workspaceID, projectID string, p sbx.Page) ([]sbx.Runtime, string, error)
	GetRuntime(ctx context.Context, orgID, workspaceID, id string) (sbx.Runtime, error)
	SetRuntimeConfig(ctx context.Context, orgID, workspaceID, id string, cfg sbx.RuntimeConfig, now time.Time) (sbx.Runtime, error)
	GetSandbox(ctx context.Context, orgID, ref string) (sbx.Sandbox, error)
	CapabilityBindings(ctx context.Context, orgID, runtimeID string, p sbx.Page) ([]sbx.CapabilityBinding, string, error)
	DeleteCapabilityBinding(ctx context.Context, orgID, runtimeID, id string) (sbx.CapabilityBinding, error)
	CapabilityBundles(ctx context.Context, orgID string, p sbx.Page) ([]sbx.CapabilityBundle, string, error)
	DeleteCapabilityBundle(ctx context.Context, orgID, name, version string) (sbx.CapabilityBundle, error)
}
