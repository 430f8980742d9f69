package client

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sbxdev/sbx/apiv1"
)

// CreateVolume makes a volume of sizeMB in the key's project (or
// projectID's, when not empty).
func (c *Client) CreateVolume(ctx context.Context, name string, sizeMB int64, projectID string) (*apiv1.Volume, error) {
	return call[apiv1.Volume](ctx, c, http.MethodPost, "/api/v1/volumes", nil, apiv1.CreateVolumeRequest{Name: name, SizeMB: sizeMB, ProjectID: projectID})
}

// Volumes lists a page of the volumes the key reaches.
func (c *Client) Volumes(ctx context.Context, cursor string, limit int) (*apiv1.VolumeList, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[apiv1.VolumeList](ctx, c, http.MethodGet, "/api/v1/volumes", q, nil)
}

// GetVolume reads a volume by ID, or by name in the key's project.
func (c *Client) GetVolume(ctx context.Context, ref string) (*apiv1.Volume, error) {
	return call[apiv1.Volume](ctx, c, http.MethodGet, volumePath(ref), nil, nil)
}

// ResizeVolume grows a volume's cap to sizeMB.
func (c *Client) ResizeVolume(ctx context.Context, ref string, sizeMB int64) (*apiv1.Volume, error) {
	return call[apiv1.Volume](ctx, c, http.MethodPost, volumePath(ref)+"/resize", nil, apiv1.ResizeVolumeRequest{SizeMB: sizeMB})
}

// DeleteVolume deletes a volume and its data.
func (c *Client) DeleteVolume(ctx context.Context, ref string) (*apiv1.Volume, error) {
	return call[apiv1.Volume](ctx, c, http.MethodDelete, volumePath(ref), nil, nil)
}

// ReadVolumeFile streams a volume's file at path; the caller closes it.
func (c *Client) ReadVolumeFile(ctx context.Context, ref, path string) (io.ReadCloser, error) {
	resp, err := c.send(ctx, http.MethodGet, volumePath(ref)+"/files", url.Values{"path": {path}}, "", nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// WriteVolumeFile writes r to a volume's file at path, making its parents.
func (c *Client) WriteVolumeFile(ctx context.Context, ref, path string, r io.Reader) (*apiv1.EntryInfo, error) {
	resp, err := c.send(ctx, http.MethodPut, volumePath(ref)+"/files", url.Values{"path": {path}}, "application/octet-stream", r)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out apiv1.EntryInfo
	return &out, json.NewDecoder(resp.Body).Decode(&out)
}

// ListVolumeFiles lists a volume's directory at path.
func (c *Client) ListVolumeFiles(ctx context.Context, ref, path string) (*apiv1.EntryList, error) {
	return call[apiv1.EntryList](ctx, c, http.MethodGet, volumePath(ref)+"/files/list", url.Values{"path": {path}}, nil)
}

func volumePath(ref string) string { return "/api/v1/volumes/" + url.PathEscape(ref) }
