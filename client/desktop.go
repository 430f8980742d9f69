package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// DesktopURL is the viewer of a sandbox's desktop, opened with its
// traffic token: what a browser opens. viewOnly false passes the viewer's
// keys and pointer on.
func (c *Client) DesktopURL(id, trafficToken string, viewOnly bool) string {
	q := url.Values{"sbx_token": {trafficToken}}
	if !viewOnly {
		q.Set("view_only", "false")
	}
	return c.base + "/api/v1/sandboxes/" + url.PathEscape(id) + "/desktop?" + q.Encode()
}

// Screenshot is a PNG of a running sandbox's desktop.
func (c *Client) Screenshot(ctx context.Context, id string) ([]byte, error) {
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/sandboxes/"+url.PathEscape(id)+"/desktop/screenshot", nil, "", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
