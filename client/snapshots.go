package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sbxdev/sbx/apiv1"
)

// SnapshotOptions are the optional parts of a snapshot.
type SnapshotOptions struct {
	Name      string
	Metadata  map[string]string
	FilesOnly bool // without memory and processes
}

// Snapshot captures sandbox id (ID or UUID), which goes on as it was, and
// answers the snapshot once it is ready; opts may be nil.
func (c *Client) Snapshot(ctx context.Context, id string, opts *SnapshotOptions) (*apiv1.Snapshot, error) {
	if opts == nil {
		opts = &SnapshotOptions{}
	}
	req := apiv1.CreateSnapshotRequest{Name: opts.Name, Metadata: opts.Metadata}
	if opts.FilesOnly {
		req.Memory = new(bool)
	}
	return call[apiv1.Snapshot](ctx, c, http.MethodPost, "/api/v1/sandboxes/"+url.PathEscape(id)+"/snapshots", nil, req)
}

// Snapshots lists a page of the snapshots the key reaches, of one source
// sandbox when sandboxID (its UUID) is not empty.
func (c *Client) Snapshots(ctx context.Context, sandboxID, cursor string, limit int) (*apiv1.SnapshotList, error) {
	q := url.Values{}
	if sandboxID != "" {
		q.Set("sandboxID", sandboxID)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[apiv1.SnapshotList](ctx, c, http.MethodGet, "/api/v1/snapshots", q, nil)
}

// GetSnapshot reads a snapshot by its ID.
func (c *Client) GetSnapshot(ctx context.Context, id string) (*apiv1.Snapshot, error) {
	return call[apiv1.Snapshot](ctx, c, http.MethodGet, "/api/v1/snapshots/"+url.PathEscape(id), nil, nil)
}

// DeleteSnapshot deletes a snapshot; the sandboxes started from it go on.
func (c *Client) DeleteSnapshot(ctx context.Context, id string) (*apiv1.Snapshot, error) {
	return call[apiv1.Snapshot](ctx, c, http.MethodDelete, "/api/v1/snapshots/"+url.PathEscape(id), nil, nil)
}

// Fork makes count running children of sandbox id, each with its memory,
// processes and files; the answer lists them and the errors of those that
// could not be made.
func (c *Client) Fork(ctx context.Context, id string, count int) (*apiv1.ForkResult, error) {
	return call[apiv1.ForkResult](ctx, c, http.MethodPost, "/api/v1/sandboxes/"+url.PathEscape(id)+"/fork", nil, apiv1.ForkRequest{Count: count})
}
