package e2b

import (
	"context"
	"net/http"
	"net/url"
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

// call calls the API (remote.API.Call).
func (p *Provider) call(ctx context.Context, method, path string, query url.Values, body, out any) (*http.Response, error) {
	return p.api.Call(ctx, method, path, query, body, out)
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
