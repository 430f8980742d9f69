package client

import (
	"context"
	"net/http"

	"github.com/sbxdev/sbx/apiv1"
)

// A workspace's agent sessions: each on a runtime (never a sandbox, so it
// outlives them), with a transcript the client appends to. org and workspace
// are IDs or names.

// Sessions returns one page of a workspace's sessions, oldest first; with
// runtimeID, only that runtime's.
func (c *Client) Sessions(ctx context.Context, org, workspace, runtimeID string, p Page) (*apiv1.SessionList, error) {
	q := page(nil, p.Limit, p.Cursor)
	if runtimeID != "" {
		q.Set("runtime_id", runtimeID)
	}
	return call[apiv1.SessionList](ctx, c, http.MethodGet, orgPath(org, "ws", workspace, "sessions"), q, nil)
}

// CreateSession starts a session on a runtime of the workspace.
func (c *Client) CreateSession(ctx context.Context, org, workspace string, req apiv1.CreateSessionRequest) (*apiv1.Session, error) {
	return call[apiv1.Session](ctx, c, http.MethodPost, orgPath(org, "ws", workspace, "sessions"), nil, req)
}

// Session fetches a session by ID.
func (c *Client) Session(ctx context.Context, org, workspace, id string) (*apiv1.Session, error) {
	return call[apiv1.Session](ctx, c, http.MethodGet, orgPath(org, "ws", workspace, "sessions", id), nil, nil)
}

// SessionMessages returns one page of a session's transcript by seq; the
// cursor is a seq, and the page holds the messages after it.
func (c *Client) SessionMessages(ctx context.Context, org, workspace, id string, p Page) (*apiv1.SessionMessageList, error) {
	return call[apiv1.SessionMessageList](ctx, c, http.MethodGet, orgPath(org, "ws", workspace, "sessions", id, "messages"),
		page(nil, p.Limit, p.Cursor), nil)
}

// AppendSessionMessages appends msgs to a session's transcript, all or
// none, and returns them numbered.
func (c *Client) AppendSessionMessages(ctx context.Context, org, workspace, id string, msgs ...apiv1.NewSessionMessage) (*apiv1.SessionMessageList, error) {
	return call[apiv1.SessionMessageList](ctx, c, http.MethodPost, orgPath(org, "ws", workspace, "sessions", id, "messages"), nil,
		apiv1.AppendMessagesRequest{Messages: msgs})
}
