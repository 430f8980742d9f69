package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sbxdev/sbx/apiv1"
)

// The org ledger view: the org's sandboxes addressed by provider sandbox ID,
// across the projects the key can see. org is the org's ID or name, as
// Me answers it.

// OrgListOptions filter and page the org's sandboxes.
type OrgListOptions struct {
	States    []string // any of these states
	ProjectID string   // this project only
	Limit     int      // page size; the server's default when zero
	Cursor    string   // next_cursor of the previous page
}

// OrgSandboxes returns one page of the org's sandboxes, newest first.
func (c *Client) OrgSandboxes(ctx context.Context, org string, opts OrgListOptions) (*apiv1.SandboxList, error) {
	q := url.Values{"state": opts.States}
	if opts.ProjectID != "" {
		q.Set("project_id", opts.ProjectID)
	}
	return call[apiv1.SandboxList](ctx, c, http.MethodGet, orgPath(org, "sandboxes"), page(q, opts.Limit, opts.Cursor), nil)
}

// OrgUsage sums the org's sandboxes, per project and in total.
func (c *Client) OrgUsage(ctx context.Context, org string) (*apiv1.OrgUsage, error) {
	return call[apiv1.OrgUsage](ctx, c, http.MethodGet, orgPath(org, "sandboxes", "usage"), nil, nil)
}

// OrgSandbox fetches one of the org's sandboxes by provider sandbox ID.
func (c *Client) OrgSandbox(ctx context.Context, org, providerID string) (*apiv1.Sandbox, error) {
	return call[apiv1.Sandbox](ctx, c, http.MethodGet, orgPath(org, "sandboxes", providerID), nil, nil)
}

// OrgDeleteSandbox kills one of the org's sandboxes by provider sandbox ID.
func (c *Client) OrgDeleteSandbox(ctx context.Context, org, providerID string) (*apiv1.Sandbox, error) {
	return call[apiv1.Sandbox](ctx, c, http.MethodDelete, orgPath(org, "sandboxes", providerID), nil, nil)
}

// OrgLogs returns a page of the log of one of the org's sandboxes.
func (c *Client) OrgLogs(ctx context.Context, org, providerID, cursor string, limit int) (*apiv1.LogPage, error) {
	return call[apiv1.LogPage](ctx, c, http.MethodGet, orgPath(org, "sandboxes", providerID, "logs"), page(nil, limit, cursor), nil)
}

// orgPath is /api/v1/org/{org}/… with every segment escaped.
func orgPath(org string, segments ...string) string {
	return apiPath(append([]string{"org", org}, segments...)...)
}
