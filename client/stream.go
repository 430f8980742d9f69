package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// The plumbing the agent's API needs beyond do: requests with streamed
// bodies, answers read as they come (NDJSON event streams, file downloads),
// and the part of the agent's API every sandbox resource shares.

// following is what a CommandHandle and a PtyHandle share: how the command
// ended, once it has, and a way to stop following it.
type following struct {
	cancel context.CancelCauseFunc
	done   chan struct{}
	res    *CommandResult // set before done closes
	err    error
}

func newFollowing(cancel context.CancelCauseFunc) following {
	return following{cancel: cancel, done: make(chan struct{})}
}

// Wait waits for the command (or terminal) to end and returns how it did: a
// non-zero exit is no error, and a terminal's output went to OnData. It
// fails when the stream or connection breaks first, after Disconnect
// (ErrDisconnected) or when the context that started following is done;
// ctx bounds this wait only.
func (f *following) Wait(ctx context.Context) (*CommandResult, error) {
	select {
	case <-f.done:
		return f.res, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Disconnect stops following; the command (or terminal) goes on running.
func (f *following) Disconnect() { f.cancel(ErrDisconnected) }

// sandboxAPI addresses the agent's API of one sandbox through the server's
// proxy, /api/v1/sandboxes/{id}/…; Commands, Files and Pty build on it.
type sandboxAPI struct {
	c  *Client
	id string // the sandbox's UUID or provider sandbox ID
}

// path is the proxied path of an agent route, each segment escaped.
func (a sandboxAPI) path(sub ...string) string { return sandboxPath(a.id, sub...) }

// command describes a command or PTY.
func (a sandboxAPI) command(ctx context.Context, ref string) (*apiv1.CommandInfo, error) {
	return call[apiv1.CommandInfo](ctx, a.c, http.MethodGet, a.path("commands", ref), nil, nil)
}

// kill sends SIGKILL to a command's or PTY's process group.
func (a sandboxAPI) kill(ctx context.Context, ref string) error {
	return a.c.do(ctx, http.MethodDelete, a.path("commands", ref), nil, nil, nil)
}

// abandon kills, best effort, a process its caller has no way to follow or
// stop: one whose PID never reached the caller, or a Run whose ctx ended.
func (a sandboxAPI) abandon(ctx context.Context, pid int) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	a.kill(ctx, strconv.Itoa(pid))
}

// send sends one request whose body, when not nil, is streamed with the
// given content type (with its length when it is sized), and answers the response of a 2xx with its body still
// to read; any other answer comes back as an *apiv1.Error. It goes through
// streaming, so only ctx bounds how long the answer takes to read.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, contentType string, body io.Reader) (*http.Response, error) {
	target := c.base + path
	if qs := query.Encode(); qs != "" {
		target += "?" + qs
	}
	var length int64 = -1
	if s, ok := body.(sized); ok {
		body, length = io.NopCloser(s.Reader), s.n // the transport would close a Closer
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, err
	}
	switch {
	case length == 0:
		req.Body = http.NoBody
	case length > 0:
		req.ContentLength = length
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	c.authorize(req.Header)
	resp, err := c.streaming().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, readError(resp)
	}
	return resp, nil
}

// authorize sets the headers that name the client and its key.
func (c *Client) authorize(h http.Header) {
	h.Set("User-Agent", "sbx-go-client")
	if c.key != "" {
		h.Set("Authorization", "Bearer "+c.key)
	}
}

// sendJSON is send with body encoded as JSON.
func (c *Client) sendJSON(ctx context.Context, method, path string, body any) (*http.Response, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding the request to %s %s: %w", method, path, err)
	}
	return c.send(ctx, method, path, nil, "application/json", bytes.NewReader(data))
}

// streaming is the client's http.Client without its overall Timeout, which
// would cut long-lived streams; contexts bound those instead.
func (c *Client) streaming() *http.Client {
	if c.http.Timeout == 0 {
		return c.http
	}
	h := *c.http
	h.Timeout = 0
	return &h
}

// decodeBody decodes a JSON answer from send and closes it.
func decodeBody[T any](resp *http.Response) (*T, error) {
	defer resp.Body.Close()
	var out T
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("decoding the answer to %s %s: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return &out, nil
}
