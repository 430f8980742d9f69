// Package opensandbox is the provider whose sandboxes live on an
// OpenSandbox server (its published lifecycle API; sbx's own /opensandbox
// among such servers). A create asks for an image (the template ID, as it
// is) with resource limits, env, the SDKs' idle entrypoint and metadata
// naming the sbx UUID and the serve instance, so that List (and so
// reconcile) sees only this instance's sandboxes, and waits for it to run;
// pause and resume are the API's and wait for their state; kill is a
// delete.
//
// OpenSandbox runs execd, not sbx's agent: the provider serves sbx's agent
// API for each sandbox inside serve (an agentbridge.Bridge over execd,
// execd.go), at the endpoint the API names for execd's port, so that sbx's
// API, CLI and SDKs run commands and move files in it as in any other.
// execd has no terminals, stdin or file watches: those are 501s naming
// the provider.
//
// A sandbox lives for a lease (Config.Lease: its expiration) that Watch
// renews while serve runs, as the e2b provider's.
package opensandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/agentbridge"
	"github.com/sbxdev/sbx/internal/remote"
)

// Name is the provider's name in the ledger.
const Name = "opensandbox"

// The metadata every sandbox carries (internal/remote's).
const (
	MetaSandbox  = remote.MetaSandbox
	MetaInstance = remote.MetaInstance
	MetaProvider = remote.MetaProvider
)

// ours says whether metadata names a sandbox of this instance and provider.
func (p *Provider) ours(md map[string]string) bool { return remote.Ours(md, p.cfg.Name, Name) }

// execdPort is execd's port in every OpenSandbox sandbox.
const execdPort = 44772

// Config is the OpenSandbox server the provider uses.
type Config struct {
	APIURL string // the server's domain as the SDKs take it, e.g. https://host; the API is under /v1
	APIKey string // its OPEN-SANDBOX-API-KEY
	// Name is the serve instance's: its sandboxes carry it in their
	// metadata (MetaInstance). Default "sbx".
	Name string
	// Lease is how long a sandbox lives without a renewal; default 10 minutes.
	Lease time.Duration
	// WatchEvery is how often Watch renews leases and looks for sandboxes
	// that ended; default a quarter of Lease.
	WatchEvery time.Duration
	HTTP       *http.Client // of the API and execd; default one of its own
}

// Provider runs sandboxes on one OpenSandbox server.
type Provider struct {
	cfg     Config
	http    *http.Client
	service remote.Service
	api     *remote.API
	bridges *agentbridge.Hosts
	leases  remote.Keeper
}

// New returns a provider over the server cfg names; it calls nothing yet.
func New(cfg Config) (*Provider, error) {
	if cfg.APIURL == "" {
		return nil, errors.New("opensandbox: no API URL")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("opensandbox: no API key")
	}
	cfg.APIURL = strings.TrimRight(cfg.APIURL, "/")
	if u, err := url.Parse(cfg.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("opensandbox: the API URL %q is not an http(s) URL", cfg.APIURL)
	}
	cfg.Name = cmp.Or(cfg.Name, "sbx")
	cfg.Lease = cmp.Or(cfg.Lease, 10*time.Minute)
	if cfg.Lease < 30*time.Second {
		return nil, fmt.Errorf("opensandbox: a lease of %s is shorter than 30s", cfg.Lease)
	}
	cfg.WatchEvery = cmp.Or(cfg.WatchEvery, cfg.Lease/4)
	p := &Provider{cfg: cfg, http: cfg.HTTP, bridges: agentbridge.NewHosts(Name)}
	if p.http == nil {
		p.http = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 32,
			IdleConnTimeout: 30 * time.Second, ForceAttemptHTTP2: true}}
	}
	p.api = &remote.API{Provider: Name, Label: "the OpenSandbox API at " + cfg.APIURL, URL: cfg.APIURL + "/v1", Header: "OPEN-SANDBOX-API-KEY", Key: cfg.APIKey, HTTP: p.http, Service: &p.service}
	return p, nil
}

// Name implements sbx.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements sbx.Provider: the API's pause keeps the sandbox's
// processes; the rest is not bridged.
func (p *Provider) Capabilities() sbx.Capabilities { return sbx.Capabilities{MemoryPause: true} }

// Check implements sbx.Checker: the API answers a list with this key.
func (p *Provider) Check(ctx context.Context) error {
	return p.call(ctx, http.MethodGet, "/sandboxes", url.Values{"pageSize": {"1"}}, nil, nil)
}

// idPattern is what a sandbox ID may be: a host label.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,62}$`)

func handleID(h sbx.Handle) (string, error) { return sbx.HandleID(h, idPattern.MatchString) }

// Admit implements sbx.Admitter (remote.Service.Admit): only the
// service's templates, and a service that answers.
func (p *Provider) Admit(ctx context.Context, spec sbx.Spec) error {
	return p.service.Admit(ctx, Name, spec, p.Check)
}

// Create implements sbx.Provider: a sandbox of image spec.TemplateID,
// once it runs. A create whose context ended may have made a sandbox that
// no answer named: it is looked for and deleted.
func (p *Provider) Create(ctx context.Context, spec sbx.Spec) (sbx.Instance, error) {
	if err := p.Admit(ctx, spec); err != nil {
		return sbx.Instance{}, err
	}
	sb, err := p.create(ctx, spec)
	if err == nil && !idPattern.MatchString(sb.ID) {
		err = sbx.Errorf(sbx.EProvider, "opensandbox: the API named its new sandbox %q, which is no sandbox ID", sb.ID)
	}
	if err == nil && sb.Status.State != stateRunning {
		err = remote.Fault(sb.ID, p.await(ctx, sb.ID, stateRunning))
	}
	if err != nil {
		remote.Sweep(p, spec.SandboxID)
		return sbx.Instance{}, err
	}
	return sbx.Instance{SandboxID: spec.SandboxID, ProviderSandboxID: sb.ID, Status: sbx.InstanceRunning, Handle: sbx.IDHandle(sb.ID)}, nil
}

// Pause implements sbx.Provider: the API's pause, once it is paused.
func (p *Provider) Pause(ctx context.Context, h sbx.Handle) error {
	return p.transition(ctx, h, "pause", statePaused)
}

// Resume implements sbx.Provider: the API's resume, once it runs.
func (p *Provider) Resume(ctx context.Context, h sbx.Handle) (sbx.Handle, error) {
	return h, p.transition(ctx, h, "resume", stateRunning)
}

func (p *Provider) transition(ctx context.Context, h sbx.Handle, action, want string) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	if err := p.call(ctx, http.MethodPost, "/sandboxes/"+id+"/"+action, nil, nil, nil); err != nil {
		return remote.Fault(id, err)
	}
	return remote.Fault(id, p.await(ctx, id, want))
}

// Kill implements sbx.Provider; a sandbox already gone is no error.
func (p *Provider) Kill(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	return p.kill(ctx, id)
}

func (p *Provider) kill(ctx context.Context, id string) error {
	p.bridges.Close(id)
	p.leases.Killed(id)
	err := p.call(ctx, http.MethodDelete, "/sandboxes/"+id, nil, nil, nil)
	if sbx.ErrorCode(err) == sbx.ENotFound {
		return nil
	}
	return remote.Fault(id, err)
}

// List implements sbx.Provider: this instance's live sandboxes.
func (p *Provider) List(ctx context.Context) ([]sbx.Instance, error) {
	list, err := p.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sbx.Instance, 0, len(list))
	for _, sb := range list {
		if !p.ours(sb.Metadata) || !idPattern.MatchString(sb.ID) {
			continue
		}
		st := sbx.InstanceRunning
		if sb.Status.State == statePaused || sb.Status.State == "Resuming" {
			st = sbx.InstancePaused
		}
		out = append(out, sbx.Instance{SandboxID: sb.Metadata[MetaSandbox], ProviderSandboxID: sb.ID, Status: st, Handle: sbx.IDHandle(sb.ID)})
	}
	return out, nil
}

// AgentAddr implements sbx.AgentDialer: the address of the sandbox's
// bridge in serve's process, started on first use over its execd, at the
// endpoint the API names for execd's port.
func (p *Provider) AgentAddr(ctx context.Context, h sbx.Handle) (string, error) {
	id, err := handleID(h)
	if err != nil {
		return "", err
	}
	return p.bridges.Addr(id, func() (agentbridge.Remote, error) {
		var ep endpoint
		if err := p.call(ctx, http.MethodGet, fmt.Sprintf("/sandboxes/%s/endpoints/%d", id, execdPort), nil, nil, &ep); err != nil {
			return nil, remote.Fault(id, err)
		}
		scheme, _, _ := strings.Cut(p.cfg.APIURL, "://")
		return &execd{http: p.http, base: scheme + "://" + strings.TrimRight(ep.Endpoint, "/"), headers: ep.Headers}, nil
	})
}

// Watch implements sbx.Watcher: every WatchEvery, it renews the lease of
// each running sandbox of this instance and reports those that were listed
// before and are gone now; a sandbox the provider killed is not reported.
func (p *Provider) Watch(ctx context.Context, died func(sbx.Died)) {
	p.leases.Watch(ctx, leased{p}, p.cfg.WatchEvery, "the sandbox is gone from the OpenSandbox server: it was deleted there, or its lease ran out", died)
}

// leased is the provider as its remote.Keeper asks it.
type leased struct{ p *Provider }

func (l leased) Live(ctx context.Context) (map[string]bool, error) {
	list, err := l.p.list(ctx)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, sb := range list {
		if l.p.ours(sb.Metadata) {
			live[sb.ID] = sb.Status.State == stateRunning
		}
	}
	return live, nil
}

func (l leased) Renew(ctx context.Context, id string) error { return l.p.renew(ctx, id) }
