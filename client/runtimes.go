package client

import (
	"context"
	"net/http"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// Runtimes: a project's durable environment, whose sandbox comes and goes.
// org is the org's ID or name, workspace a workspace's ID or name, id the
// runtime's ID. Every action answers the runtime as it leaves it; pause,
// resume, reset and keepalive fail with a 409 *Error while it has no sandbox.

// Runtimes returns one page of a workspace's runtimes.
func (c *Client) Runtimes(ctx context.Context, org, workspace string, p Page) (*apiv1.RuntimeList, error) {
	return call[apiv1.RuntimeList](ctx, c, http.MethodGet, runtimePath(org, workspace), page(nil, p.Limit, p.Cursor), nil)
}

// Runtime returns a runtime with its current sandbox.
func (c *Client) Runtime(ctx context.Context, org, workspace, id string) (*apiv1.Runtime, error) {
	return call[apiv1.Runtime](ctx, c, http.MethodGet, runtimePath(org, workspace, id), nil, nil)
}

// UpdateRuntime replaces the fields of a runtime's configuration that req
// sets; its next start uses them.
func (c *Client) UpdateRuntime(ctx context.Context, org, workspace, id string, req apiv1.UpdateRuntimeRequest) (*apiv1.Runtime, error) {
	return call[apiv1.Runtime](ctx, c, http.MethodPatch, runtimePath(org, workspace, id), nil, req)
}

// StartRuntime provisions a sandbox for an idle runtime and returns once it
// is ready.
func (c *Client) StartRuntime(ctx context.Context, org, workspace, id string, req apiv1.StartRuntimeRequest) (*apiv1.Runtime, error) {
	return call[apiv1.Runtime](ctx, c, http.MethodPost, runtimePath(org, workspace, id, "start"), nil, req)
}

// PauseRuntime pauses a runtime's sandbox.
func (c *Client) PauseRuntime(ctx context.Context, org, workspace, id string) (*apiv1.Runtime, error) {
	return call[apiv1.Runtime](ctx, c, http.MethodPost, runtimePath(org, workspace, id, "pause"), nil, nil)
}

// ResumeRuntime resumes a runtime's paused sandbox.
func (c *Client) ResumeRuntime(ctx context.Context, org, workspace, id string) (*apiv1.Runtime, error) {
	return call[apiv1.Runtime](ctx, c, http.MethodPost, runtimePath(org, workspace, id, "resume"), nil, nil)
}

// ResetRuntime kills a runtime's sandbox and leaves the runtime idle.
func (c *Client) ResetRuntime(ctx context.Context, org, workspace, id string) (*apiv1.Runtime, error) {
	return call[apiv1.Runtime](ctx, c, http.MethodPost, runtimePath(org, workspace, id, "reset"), nil, nil)
}

// KeepaliveRuntime keeps a runtime's running sandbox alive for at least
// extend more (0: the runtime's configured timeout); it never shortens.
func (c *Client) KeepaliveRuntime(ctx context.Context, org, workspace, id string, extend time.Duration) (*apiv1.Runtime, error) {
	var req apiv1.KeepaliveRuntimeRequest
	if extend > 0 {
		s := int64(extend.Round(time.Second) / time.Second)
		req.ExtendSeconds = &s
	}
	return call[apiv1.Runtime](ctx, c, http.MethodPost, runtimePath(org, workspace, id, "keepalive"), nil, req)
}

func runtimePath(org, workspace string, segments ...string) string {
	return orgPath(org, append([]string{"ws", workspace, "runtimes"}, segments...)...)
}
