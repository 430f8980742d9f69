package client

import (
	"context"
	"net/http"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/ndjson"
)

// FollowLogs passes fn a sandbox's whole log, oldest first, then each line
// as it is added, until the sandbox ends (killed or failed: nil, after its
// last lines), ctx ends, or fn answers an error (io.EOF stops it with nil).
// A paused sandbox's log is followed on. Only ctx bounds how long it lasts.
func (c *Client) FollowLogs(ctx context.Context, id string, fn func(apiv1.LogLine) error) error {
	resp, err := c.send(ctx, http.MethodGet, sandboxPath(id, "logs", "stream"), nil, "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return ndjson.Read(resp.Body, fn)
}

// FollowLogs follows the sandbox's log; see Client.FollowLogs.
func (s *Sandbox) FollowLogs(ctx context.Context, fn func(apiv1.LogLine) error) error {
	return s.c.FollowLogs(ctx, s.ID(), fn)
}

// ServerVersion says which sbx the server runs (its answer to Me).
func (c *Client) ServerVersion(ctx context.Context) (*apiv1.Version, error) {
	me, err := c.Me(ctx)
	if err != nil {
		return nil, err
	}
	return &me.Server, nil
}
