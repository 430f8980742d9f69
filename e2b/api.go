package e2b

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
	"github.com/sbxdev/sbx/internal/remote"
)

// api is a client of E2B's control-plane API (api.e2b.app's, or any server
// of that API, sbx's own /e2b among them), authenticated by X-API-KEY.

// sandbox is what a create, a connect or a get answers of a sandbox.
type sandbox struct {
	SandboxID       string            `json:"sandboxID"`
	TemplateID      string            `json:"templateID"`
	EnvdAccessToken string            `json:"envdAccessToken"`
	Domain          *string           `json:"domain"`
	State           string            `json:"state"` // get and list only: running or paused
	Metadata        map[string]string `json:"metadata"`
}

// newSandbox is the body of a create.
type newSandbox struct {
	TemplateID string            `json:"templateID"`
	Timeout    int64             `json:"timeout"`
	Metadata   map[string]string `json:"metadata"`
	EnvVars    map[string]string `json:"envVars,omitempty"`
	AutoPause  bool              `json:"autoPause"`
	Secure     bool              `json:"secure"`
}

// timeoutBody is the body of a connect and of a timeout.
type timeoutBody struct {
	Timeout int64 `json:"timeout"`
}

// logs is what GET /sandboxes/{id}/logs answers.
type logs struct {
	Logs []struct {
		Timestamp time.Time `json:"timestamp"`
		Line      string    `json:"line"`
	} `json:"logs"`
}

// metric is one point of GET /sandboxes/{id}/metrics.
type metric struct {
	Timestamp time.Time `json:"timestamp"`
	MemUsed   int64     `json:"memUsed"`
	DiskUsed  int64     `json:"diskUsed"`
}

// apiError is E2B's error body.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// call sends a request to the API and decodes a 2xx answer into out (when
// not nil); any other answer is an *sbx.Error whose code follows the status
// and whose message is the API's, prefixed by what was asked.
func (p *Provider) call(ctx context.Context, method, path string, query url.Values, body, out any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(data)
	}
	u := p.cfg.APIURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-API-KEY", p.cfg.APIKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, sbx.Errorf(sbx.EUnavailable, "the E2B API at %s does not answer: %v", p.cfg.APIURL, err)
	}
	defer resp.Body.Close()
	p.service.Answered()
	if resp.StatusCode/100 != 2 {
		return resp, apiFault(method, path, resp)
	}
	if out != nil {
		if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(out); err != nil {
			return resp, sbx.Errorf(sbx.EProvider, "e2b: %s %s: a malformed answer: %v", method, path, err)
		}
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp, nil
}

// apiFault is the *sbx.Error of an answer that is not a 2xx.
func apiFault(method, path string, resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e errorBody
	msg := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &e) == nil && e.Message != "" {
		msg = e.Message
	}
	if len(msg) > 512 {
		msg = msg[:512] + "…"
	}
	code := sbx.EProvider
	switch {
	case resp.StatusCode == http.StatusBadRequest:
		code = sbx.EInvalid
	case resp.StatusCode == http.StatusNotFound:
		code = sbx.ENotFound
	case resp.StatusCode == http.StatusConflict:
		code = sbx.EConflict
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusServiceUnavailable:
		code = sbx.EUnavailable
	}
	return sbx.Errorf(code, "e2b: %s %s: %s: %s", method, path, resp.Status, msg)
}

// create makes a sandbox of template with the metadata that names it
// sbx's, living for the lease unless renewed.
func (p *Provider) create(ctx context.Context, spec sbx.Spec) (sandbox, error) {
	md := remote.Metadata(spec, p.cfg.Name, Name)
	var out sandbox
	_, err := p.call(ctx, http.MethodPost, "/sandboxes", nil, newSandbox{TemplateID: spec.TemplateID, Timeout: p.leaseSeconds(),
		Metadata: md, EnvVars: spec.Env, Secure: true}, &out)
	return out, err
}

// get reads a sandbox; one that ended is ENotFound.
func (p *Provider) get(ctx context.Context, id string) (sandbox, error) {
	var out sandbox
	_, err := p.call(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// list reads every running and paused sandbox of this instance.
func (p *Provider) list(ctx context.Context) ([]sandbox, error) {
	var all []sandbox
	q := url.Values{"metadata": {url.Values{MetaInstance: {p.cfg.Name}, MetaProvider: {Name}}.Encode()}, "state": {"running", "paused"}, "limit": {"100"}}
	for {
		var page []sandbox
		resp, err := p.call(ctx, http.MethodGet, "/v2/sandboxes", q, nil, &page)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		next := resp.Header.Get("X-Next-Token")
		if next == "" || len(page) == 0 {
			return all, nil
		}
		q.Set("nextToken", next)
	}
}

// renew sets a running sandbox's timeout to the lease from now.
func (p *Provider) renew(ctx context.Context, id string) error {
	_, err := p.call(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/timeout", nil, timeoutBody{Timeout: p.leaseSeconds()}, nil)
	return err
}

// leaseSeconds is how long a sandbox lives without a renewal, in seconds.
func (p *Provider) leaseSeconds() int64 { return int64(p.cfg.Lease / time.Second) }

// fault prefixes an error with the sandbox it concerns.
func fault(id string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*sbx.Error); ok {
		return &sbx.Error{Code: e.Code, Message: fmt.Sprintf("sandbox %s: %s", id, e.Message), RetryAfter: e.RetryAfter}
	}
	return fmt.Errorf("sandbox %s: %w", id, err)
}
