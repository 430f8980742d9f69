package client

import (
	"context"
	"net/http"

	"github.com/sbxdev/sbx/apiv1"
)

// Tenancy: the operator's routes (orgs, plans, verification), and an org's
// workspaces, projects, members and API keys. org is the org's ID or name,
// workspace a workspace's ID or name, as the server answers them.

// Page selects one page of a list; the zero Page is the server's first page
// of its default size.
type Page struct {
	Limit  int    // page size; the server's default when zero
	Cursor string // next_cursor of the previous page
}

// CreateOrg makes an org with a default workspace and project and returns
// it with the secret of an owner key (the operator's key only).
func (c *Client) CreateOrg(ctx context.Context, req apiv1.CreateOrgRequest) (*apiv1.CreatedOrg, error) {
	return call[apiv1.CreatedOrg](ctx, c, http.MethodPost, apiPath("admin", "orgs"), nil, req)
}

// Orgs returns one page of every org (the operator's key only).
func (c *Client) Orgs(ctx context.Context, p Page) (*apiv1.OrgList, error) {
	return call[apiv1.OrgList](ctx, c, http.MethodGet, apiPath("admin", "orgs"), page(nil, p.Limit, p.Cursor), nil)
}

// SetPlan replaces an org's plan (the operator's key only); a limit left
// out or 0 is no limit.
func (c *Client) SetPlan(ctx context.Context, org string, plan apiv1.SetPlanRequest) (*apiv1.PlanChange, error) {
	return call[apiv1.PlanChange](ctx, c, http.MethodPut, apiPath("admin", "orgs", org, "plan"), nil, plan)
}

// SetOrgVerification sets an org's verification state: unverified, pending
// or verified (the operator's key only).
func (c *Client) SetOrgVerification(ctx context.Context, org, status string) (*apiv1.Org, error) {
	return call[apiv1.Org](ctx, c, http.MethodPut, apiPath("admin", "orgs", org, "verification"), nil, apiv1.VerificationRequest{Status: status})
}

// SetUserVerification sets a user's (by ID or email) verification state
// (the operator's key only).
func (c *Client) SetUserVerification(ctx context.Context, user, status string) (*apiv1.User, error) {
	return call[apiv1.User](ctx, c, http.MethodPut, apiPath("admin", "users", user, "verification"), nil, apiv1.VerificationRequest{Status: status})
}

// Workspaces returns one page of an org's workspaces.
func (c *Client) Workspaces(ctx context.Context, org string, p Page) (*apiv1.WorkspaceList, error) {
	return call[apiv1.WorkspaceList](ctx, c, http.MethodGet, orgPath(org, "workspaces"), page(nil, p.Limit, p.Cursor), nil)
}

// CreateWorkspace makes a workspace, with a project named default.
func (c *Client) CreateWorkspace(ctx context.Context, org, name string) (*apiv1.Workspace, error) {
	return call[apiv1.Workspace](ctx, c, http.MethodPost, orgPath(org, "workspaces"), nil, apiv1.CreateWorkspaceRequest{Name: name})
}

// Projects returns one page of a workspace's projects.
func (c *Client) Projects(ctx context.Context, org, workspace string, p Page) (*apiv1.ProjectList, error) {
	return call[apiv1.ProjectList](ctx, c, http.MethodGet, orgPath(org, "ws", workspace, "projects"), page(nil, p.Limit, p.Cursor), nil)
}

// CreateProject makes a project, and its runtime, in a workspace.
func (c *Client) CreateProject(ctx context.Context, org, workspace, name string) (*apiv1.Project, error) {
	return call[apiv1.Project](ctx, c, http.MethodPost, orgPath(org, "ws", workspace, "projects"), nil, apiv1.CreateProjectRequest{Name: name})
}

// Members returns one page of a workspace's members.
func (c *Client) Members(ctx context.Context, org, workspace string, p Page) (*apiv1.MemberList, error) {
	return call[apiv1.MemberList](ctx, c, http.MethodGet, orgPath(org, "ws", workspace, "members"), page(nil, p.Limit, p.Cursor), nil)
}

// AddMember adds a member to a workspace; the answer lists the sandboxes a
// member beyond the plan's limit paused.
func (c *Client) AddMember(ctx context.Context, org, workspace string, req apiv1.AddMemberRequest) (*apiv1.MemberChange, error) {
	return call[apiv1.MemberChange](ctx, c, http.MethodPost, orgPath(org, "ws", workspace, "members"), nil, req)
}

// RemoveMember removes a member (by user ID or email) from a workspace; the
// answer lists the sandboxes that resumed, back within the plan's limit.
func (c *Client) RemoveMember(ctx context.Context, org, workspace, member string) (*apiv1.MemberChange, error) {
	return call[apiv1.MemberChange](ctx, c, http.MethodDelete, orgPath(org, "ws", workspace, "members", member), nil, nil)
}

// Keys returns one page of an org's API keys, revoked ones included.
func (c *Client) Keys(ctx context.Context, org string, p Page) (*apiv1.APIKeyList, error) {
	return call[apiv1.APIKeyList](ctx, c, http.MethodGet, orgPath(org, "keys"), page(nil, p.Limit, p.Cursor), nil)
}

// CreateKey makes an API key: a member's (req.User), a project's
// (req.ProjectID) or an org-wide one (neither). Its secret is in the answer
// only.
func (c *Client) CreateKey(ctx context.Context, org string, req apiv1.CreateKeyRequest) (*apiv1.CreatedKey, error) {
	return call[apiv1.CreatedKey](ctx, c, http.MethodPost, orgPath(org, "keys"), nil, req)
}

// RevokeKey stops a key from working at once.
func (c *Client) RevokeKey(ctx context.Context, org, id string) (*apiv1.APIKey, error) {
	return call[apiv1.APIKey](ctx, c, http.MethodDelete, orgPath(org, "keys", id), nil, nil)
}
