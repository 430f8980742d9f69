// Package client is the Go client of sbx's REST API, version 1.
//
// A Client holds the server's URL and an API key; Create and Connect return a
// Sandbox handle whose methods act on that sandbox. Every answer the server
// refuses comes back as an *apiv1.Error carrying the server's detail:
//
//	c := client.New(client.Options{URL: "http://127.0.0.1:7070", APIKey: key})
//	sb, err := c.Create(ctx, "base", &client.CreateOptions{
//		Timeout:   30 * time.Minute,
//		WaitReady: true,
//		Metadata:  map[string]string{"purpose": "demo"},
//	})
//	if err != nil {
//		var apiErr *apiv1.Error
//		if errors.As(err, &apiErr) && apiErr.Code == http.StatusConflict { … }
//		return err
//	}
//	defer sb.Delete(ctx)
//	fmt.Println(sb.SandboxID(), sb.Data().RuntimeURL)
//
// Durations travel as whole seconds; a fraction of a second rounds up.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// DefaultURL is the API address of an `sbx serve` started with no flags.
const DefaultURL = "http://127.0.0.1:7070"

// Options configure a Client.
type Options struct {
	URL        string       // base URL of the server; DefaultURL when empty
	APIKey     string       // sent as "Authorization: Bearer <APIKey>"
	HTTPClient *http.Client // http.DefaultClient when nil
}

// Client calls one sbx server. It is safe for concurrent use.
type Client struct {
	base string
	key  string
	http *http.Client
}

// New returns a client for the server and key in opts.
func New(opts Options) *Client {
	c := &Client{base: strings.TrimRight(opts.URL, "/"), key: opts.APIKey, http: opts.HTTPClient}
	if c.base == "" {
		c.base = DefaultURL
	}
	if c.http == nil {
		c.http = http.DefaultClient
	}
	return c
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.base }

// Me says who the API key acts for.
func (c *Client) Me(ctx context.Context) (*apiv1.Me, error) {
	return call[apiv1.Me](ctx, c, http.MethodGet, "/api/v1/me", nil, nil)
}

// Summary is the observability summary: usage, quotas, providers, next actions.
func (c *Client) Summary(ctx context.Context) (*apiv1.Summary, error) {
	return call[apiv1.Summary](ctx, c, http.MethodGet, "/api/v1/observability/summary", nil, nil)
}

// call sends one request and answers the decoded 2xx body.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any) (*T, error) {
	var out T
	if err := c.do(ctx, method, path, query, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// do sends one request and decodes a 2xx answer into out (when not nil).
// body, when not nil, is sent as JSON; query may be nil.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.doWith(ctx, method, path, query, nil, body, out)
}

// doWith is do with extra request headers.
func (c *Client) doWith(ctx context.Context, method, path string, query url.Values, header http.Header, body, out any) error {
	target := c.base + path
	if qs := query.Encode(); qs != "" {
		target += "?" + qs
	}
	var payload io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encoding the request to %s %s: %w", method, path, err)
		}
		payload = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, payload)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "sbx-go-client")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decoding the answer to %s %s: %w", method, path, err)
	}
	return nil
}

// apiPath is /api/v1/ followed by segments, each path-escaped.
func apiPath(segments ...string) string {
	p := "/api/v1"
	for _, s := range segments {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// sandboxPath is the path of a sandbox, or of a sub-resource of it.
func sandboxPath(id string, sub ...string) string {
	return apiPath(append([]string{"sandboxes", id}, sub...)...)
}

// page adds the limit and cursor of a list request to q.
func page(q url.Values, limit int, cursor string) url.Values {
	if q == nil {
		q = url.Values{}
	}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

// seconds renders a duration as whole seconds, rounding up; nil when d <= 0,
// which leaves the server's default.
func seconds(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	s := int64((d + time.Second - 1) / time.Second)
	return &s
}
