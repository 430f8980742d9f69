package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
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

// maxLine bounds a line of an event stream: a chunk of output is at most
// about a MiB, base64 in JSON; a sandbox is no reason to exhaust our memory.
const maxLine = 16 << 20

// readNDJSON decodes r line by line into fn until r ends or fn answers
// io.EOF (nil), or until fn or the stream fails. Blank lines are skipped.
// The bytes of an output event's Data are fn's only until it returns.
func readNDJSON[T any](r io.Reader, fn func(T) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line, data []byte // reused from line to line
	for {
		var err error
		line, err = readLine(br, line[:0])
		if len(bytes.TrimSpace(line)) > 0 {
			var v T
			if jerr := decodeLine(line, &v, &data); jerr != nil {
				return fmt.Errorf("decoding a stream line: %w", jerr)
			}
			if ferr := fn(v); errors.Is(ferr, io.EOF) {
				// The stream's end follows at once: reading it lets the
				// connection be used again.
				io.Copy(io.Discard, io.LimitReader(br, 64<<10))
				return nil
			} else if ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// decodeLine decodes one line of a stream into v. An output event in the
// form the agent writes, {"type":"stdout","data":"<base64>"}, skips the
// JSON scanner and decodes into *data, reused: at hundreds of MB/s of
// output, scanning the base64 and allocating for it cost more than all the
// rest. Any other line, or one that does not decode so, goes through
// encoding/json.
func decodeLine[T any](line []byte, v *T, data *[]byte) error {
	if e, ok := any(v).(*apiv1.CommandEvent); ok && decodeOutputEvent(line, e, data) {
		return nil
	}
	return json.Unmarshal(line, v)
}

// outputPrefixes start the output events the agent writes, by stream.
var outputPrefixes = []struct {
	stream string
	prefix []byte
}{{"stdout", []byte(`{"type":"stdout","data":"`)}, {"stderr", []byte(`{"type":"stderr","data":"`)}}

// decodeOutputEvent decodes an output event written as the agent writes
// them, and reports whether line was one.
func decodeOutputEvent(line []byte, e *apiv1.CommandEvent, buf *[]byte) bool {
	for _, p := range outputPrefixes {
		rest, ok := bytes.CutPrefix(line, p.prefix)
		if !ok {
			continue
		}
		b64, ok := bytes.CutSuffix(bytes.TrimRight(rest, "\r\n"), []byte(`"}`))
		if !ok {
			return false
		}
		data, err := base64.StdEncoding.AppendDecode((*buf)[:0], b64)
		if err != nil {
			return false
		}
		if data == nil {
			data = []byte{} // as encoding/json decodes ""
		}
		*buf, *e = data, apiv1.CommandEvent{Type: p.stream, Data: data}
		return true
	}
	return false
}

// readLine appends to line up to and including the next newline, at most
// maxLine bytes.
func readLine(br *bufio.Reader, line []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("a stream line is longer than %d bytes", maxLine)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
