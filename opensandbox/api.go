package opensandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/remote"
)

// api is a client of OpenSandbox's lifecycle API (/v1 under the server's
// domain), authenticated by OPEN-SANDBOX-API-KEY.

// The states the API names.
const (
	stateRunning = "Running"
	statePaused  = "Paused"
	stateFailed  = "Failed"
)

// sandbox is the API's Sandbox.
type sandbox struct {
	ID     string `json:"id"`
	Status struct {
		State   string `json:"state"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"status"`
	Metadata map[string]string `json:"metadata"`
}

// createBody is the body of a create.
type createBody struct {
	Image          image             `json:"image"`
	Timeout        int64             `json:"timeout"`
	ResourceLimits map[string]string `json:"resourceLimits"`
	Env            map[string]string `json:"env,omitempty"`
	Metadata       map[string]string `json:"metadata"`
	Entrypoint     []string          `json:"entrypoint"`
}

type image struct {
	URI string `json:"uri"`
}

// idleEntrypoint is the entrypoint the SDKs give a sandbox that runs
// nothing of its own.
var idleEntrypoint = []string{"tail", "-f", "/dev/null"}

// endpoint is where the API says a port of a sandbox is reached.
type endpoint struct {
	Endpoint string            `json:"endpoint"` // host[:port][/path], without a scheme
	Headers  map[string]string `json:"headers"`
}

// call calls the API (remote.API.Call).
func (p *Provider) call(ctx context.Context, method, path string, query url.Values, body, out any) error {
	_, err := p.api.Call(ctx, method, path, query, body, out)
	return err
}

// create makes a sandbox from image spec.TemplateID with the metadata that
// names it sbx's, living for the lease unless renewed.
func (p *Provider) create(ctx context.Context, spec sbx.Spec) (sandbox, error) {
	md := remote.Metadata(spec, p.cfg.Name, Name)
	limits := map[string]string{}
	if spec.Resources.MilliCPU > 0 {
		limits["cpu"] = fmt.Sprintf("%dm", spec.Resources.MilliCPU)
	}
	if spec.Resources.MemoryMB > 0 {
		limits["memory"] = fmt.Sprintf("%dMi", spec.Resources.MemoryMB)
	}
	var out sandbox
	err := p.call(ctx, http.MethodPost, "/sandboxes", nil, createBody{Image: image{URI: spec.TemplateID}, Timeout: p.leaseSeconds(),
		ResourceLimits: limits, Env: spec.Env, Metadata: md, Entrypoint: idleEntrypoint}, &out)
	return out, err
}

func (p *Provider) get(ctx context.Context, id string) (sandbox, error) {
	var out sandbox
	err := p.call(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id), nil, nil, &out)
	return out, err
}

// list reads every sandbox of this instance that runs or is paused.
func (p *Provider) list(ctx context.Context) ([]sandbox, error) {
	var all []sandbox
	md := url.Values{MetaInstance: {p.cfg.Name}, MetaProvider: {Name}}.Encode()
	for page := 1; ; page++ {
		var out struct {
			Items      []sandbox `json:"items"`
			Pagination struct {
				HasNextPage bool `json:"hasNextPage"`
			} `json:"pagination"`
		}
		q := url.Values{"metadata": {md}, "state": {"Pending", stateRunning, "Pausing", statePaused, "Resuming"},
			"page": {fmt.Sprint(page)}, "pageSize": {"100"}}
		if err := p.call(ctx, http.MethodGet, "/sandboxes", q, nil, &out); err != nil {
			return nil, err
		}
		all = append(all, out.Items...)
		if !out.Pagination.HasNextPage || len(out.Items) == 0 {
			return all, nil
		}
	}
}

// renew sets a sandbox's expiration to the lease from now.
func (p *Provider) renew(ctx context.Context, id string) error {
	at := time.Now().Add(p.cfg.Lease).UTC().Format(time.RFC3339)
	return p.call(ctx, http.MethodPost, "/sandboxes/"+url.PathEscape(id)+"/renew-expiration", nil, map[string]string{"expiresAt": at}, nil)
}

// await polls a sandbox until it is in state want, failing when it fails
// or ends, or ctx does.
func (p *Provider) await(ctx context.Context, id, want string) error {
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		sb, err := p.get(ctx, id)
		if err != nil {
			return err
		}
		switch st := sb.Status.State; {
		case st == want:
			return nil
		case st == stateFailed || st == "Terminated":
			return sbx.Errorf(sbx.EProvider, "opensandbox: sandbox %s is %s: %s %s", id, st, sb.Status.Reason, sb.Status.Message)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}

func (p *Provider) leaseSeconds() int64 { return int64(p.cfg.Lease / time.Second) }
