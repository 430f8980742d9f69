package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sbxdev/sbx/apiv1"
)

// WarmPools lists every template's warm pool (the operator's).
func (c *Client) WarmPools(ctx context.Context) (*apiv1.WarmPoolList, error) {
	return call[apiv1.WarmPoolList](ctx, c, http.MethodGet, "/api/v1/admin/template-warm-pools", nil, nil)
}

// SetWarmPool keeps sandboxes of template ready for creates to check out.
func (c *Client) SetWarmPool(ctx context.Context, template string, req apiv1.SetWarmPoolRequest) (*apiv1.WarmPool, error) {
	return call[apiv1.WarmPool](ctx, c, http.MethodPut, "/api/v1/admin/template-warm-pools/"+url.PathEscape(template), nil, req)
}

// DeleteWarmPool deletes template's warm pool and kills its waiting members.
func (c *Client) DeleteWarmPool(ctx context.Context, template string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/admin/template-warm-pools/"+url.PathEscape(template), nil, nil, nil)
}

// PrepareTemplate starts giving template a ready snapshot (the operator's);
// ReadyTemplate follows it.
func (c *Client) PrepareTemplate(ctx context.Context, template string, req apiv1.PrepareTemplateRequest) (*apiv1.ReadyTemplate, error) {
	return call[apiv1.ReadyTemplate](ctx, c, http.MethodPut, "/api/v1/admin/templates/"+url.PathEscape(template)+"/ready", nil, req)
}

// ReadyTemplate says where template's ready snapshot stands.
func (c *Client) ReadyTemplate(ctx context.Context, template string) (*apiv1.ReadyTemplate, error) {
	return call[apiv1.ReadyTemplate](ctx, c, http.MethodGet, "/api/v1/admin/templates/"+url.PathEscape(template)+"/ready", nil, nil)
}

// DropReadyTemplate deletes template's ready snapshot.
func (c *Client) DropReadyTemplate(ctx context.Context, template string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/admin/templates/"+url.PathEscape(template)+"/ready", nil, nil, nil)
}
