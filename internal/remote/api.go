package remote

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

	"github.com/sbxdev/sbx"
)

// API is a remote service's JSON API as its provider calls it: a key in a
// header, JSON both ways, and every answer that is not a 2xx an *sbx.Error
// whose code follows the status and whose message is the service's
// {"message"}, prefixed by the provider and what was asked.
type API struct {
	Provider string // the provider's name, in messages
	Label    string // the service as messages name it: "the E2B API at https://…"
	URL      string // what paths are joined to
	Header   string // the key's header
	Key      string
	HTTP     *http.Client
	Service  *Service // told of every answer
}

// Call sends method path?query with body as JSON (when not nil) and
// decodes a 2xx answer into out (when not nil). It answers the response,
// its body read and closed, for its status and headers.
func (a *API) Call(ctx context.Context, method, path string, query url.Values, body, out any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(data)
	}
	u := a.URL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set(a.Header, a.Key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return nil, sbx.Errorf(sbx.EUnavailable, "%s does not answer: %v", a.Label, err)
	}
	defer resp.Body.Close()
	a.Service.Answered()
	if resp.StatusCode/100 != 2 {
		return resp, a.fault(method, path, resp)
	}
	if out != nil {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
			return resp, sbx.Errorf(sbx.EProvider, "%s: %s %s: a malformed answer: %v", a.Provider, method, path, err)
		}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp, nil
}

// fault is the *sbx.Error of an answer that is not a 2xx.
func (a *API) fault(method, path string, resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct{ Message string }
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &e) == nil && e.Message != "" {
		msg = e.Message
	}
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	code := sbx.EProvider
	switch resp.StatusCode {
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		code = sbx.EInvalid
	case http.StatusNotFound:
		code = sbx.ENotFound
	case http.StatusConflict:
		code = sbx.EConflict
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		code = sbx.EUnavailable
	}
	return sbx.Errorf(code, "%s: %s %s: %s: %s", a.Provider, method, path, resp.Status, msg)
}

// Fault prefixes an error with the sandbox it concerns, keeping its code.
func Fault(id string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*sbx.Error); ok {
		return &sbx.Error{Code: e.Code, Message: fmt.Sprintf("sandbox %s: %s", id, e.Message), RetryAfter: e.RetryAfter}
	}
	return fmt.Errorf("sandbox %s: %w", id, err)
}

// Sweep kills what a create for sandboxID may have left on p's service
// that no answer named (its context ended, or its answer was lost), if
// anything: p lists it by the metadata that names it.
func Sweep(p sbx.Provider, sandboxID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := p.List(ctx)
	if err != nil {
		return
	}
	for _, in := range list {
		if in.SandboxID == sandboxID {
			p.Kill(ctx, in.Handle)
		}
	}
}
