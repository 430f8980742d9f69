package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/sbxdev/sbx/apiv1"
)

// Templates lists the templates sandboxes start from, each with every
// version kept.
func (c *Client) Templates(ctx context.Context) (*apiv1.TemplateList, error) {
	return call[apiv1.TemplateList](ctx, c, http.MethodGet, "/api/v1/templates", nil, nil)
}

// Template reads one template.
func (c *Client) Template(ctx context.Context, name string) (*apiv1.Template, error) {
	return call[apiv1.Template](ctx, c, http.MethodGet, "/api/v1/templates/"+url.PathEscape(name), nil, nil)
}

// DeleteTemplate deletes a template, every version of it, and its ready
// snapshot (the operator's); a 409 names what still stands on it.
func (c *Client) DeleteTemplate(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/api/v1/templates/"+url.PathEscape(name), nil, nil, nil)
}
