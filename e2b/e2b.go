// Package e2b is the provider whose sandboxes live on a server of E2B's
// API: E2B's own service, or any installation of it (sbx's /e2b among
// them). Its control plane (api.go) creates a sandbox from an E2B template
// ID, with metadata naming the sbx UUID and the serve instance so that List
// (and so reconcile) sees only this instance's sandboxes; pauses it (E2B
// keeps its memory), resumes it by a connect, kills it, and reads its logs
// and metrics.
//
// E2B runs no sbx agent: its sandboxes run envd. The provider serves
// sbx's agent API for each sandbox inside serve itself (an
// agentbridge.Bridge over envd: remote.go, envd.go), on an in-process
// listener (internal/pipenet) that no other process reaches, so that
// sbx's API, CLI, SDKs and SSH gateway reach an e2b sandbox as they reach
// any other.
//
// A sandbox lives for a lease (Config.Lease: its E2B timeout) that Watch
// renews while serve runs: a serve that stops leaves no compute behind for
// longer than the lease, and one that restarts adopts what is still there.
package e2b

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/agentbridge"
	"github.com/sbxdev/sbx/internal/remote"
)

// Name is the provider's name in the ledger.
const Name = "e2b"

// The metadata every sandbox carries (internal/remote's).
const (
	MetaSandbox  = remote.MetaSandbox
	MetaInstance = remote.MetaInstance
	MetaProvider = remote.MetaProvider
)

// ours says whether metadata names a sandbox of this instance and provider.
func (p *Provider) ours(md map[string]string) bool { return remote.Ours(md, p.cfg.Name, Name) }

// envdPort is envd's port in every E2B sandbox.
const envdPort = 49983

// Config is the E2B API the provider uses.
type Config struct {
	APIURL string // the control plane, e.g. https://api.e2b.app
	APIKey string // its X-API-KEY
	// Domain is the sandboxes' domain, where a sandbox's envd is
	// https://49983-<id>.<Domain> (http:// when APIURL is), when the API's
	// answer names none.
	Domain string
	// SandboxURL, when set, is where every sandbox's envd is reached, with
	// the E2b-Sandbox-Id and E2b-Sandbox-Port headers naming it (E2B's
	// E2B_SANDBOX_URL), in place of its domain.
	SandboxURL string
	// Name is the serve instance's: its sandboxes carry it in their
	// metadata (MetaInstance). Default "sbx".
	Name string
	// Lease is a sandbox's E2B timeout, which Watch renews while serve
	// runs; default 10 minutes.
	Lease time.Duration
	// WatchEvery is how often Watch renews leases and looks for sandboxes
	// that ended; default a quarter of Lease.
	WatchEvery time.Duration
	// HTTP is the client of the API and of envd; default one of its own.
	HTTP *http.Client
}

// Provider runs sandboxes on one E2B API server.
type Provider struct {
	cfg     Config
	http    *http.Client
	service remote.Service
	api     *remote.API

	bridges *agentbridge.Hosts
	leases  remote.Keeper

	mu    sync.Mutex
	envds map[string]*envd // by E2B sandbox ID: how serve reaches the sandboxes it knows
}

// New returns a provider over the API cfg names; it calls nothing yet.
func New(cfg Config) (*Provider, error) {
	if cfg.APIURL == "" {
		return nil, errors.New("e2b: no API URL")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("e2b: no API key")
	}
	cfg.Name = cmp.Or(cfg.Name, "sbx")
	cfg.Domain = cmp.Or(cfg.Domain, "e2b.app")
	cfg.Lease = cmp.Or(cfg.Lease, 10*time.Minute)
	if cfg.Lease < 30*time.Second {
		return nil, fmt.Errorf("e2b: a lease of %s is shorter than 30s", cfg.Lease)
	}
	cfg.WatchEvery = cmp.Or(cfg.WatchEvery, cfg.Lease/4)
	p := &Provider{cfg: cfg, http: cfg.HTTP, bridges: agentbridge.NewHosts(Name), envds: map[string]*envd{}}
	if p.http == nil {
		p.http = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 32,
			IdleConnTimeout: 30 * time.Second, ForceAttemptHTTP2: true}}
	}
	p.api = &remote.API{Provider: Name, Label: "the E2B API at " + cfg.APIURL, URL: cfg.APIURL, Header: "X-API-KEY", Key: cfg.APIKey, HTTP: p.http, Service: &p.service}
	return p, nil
}

// Name implements sbx.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements sbx.Provider: E2B's pause keeps memory; the rest
// is not bridged.
func (p *Provider) Capabilities() sbx.Capabilities { return sbx.Capabilities{MemoryPause: true} }

// Check implements sbx.Checker: the API answers a list with this key.
func (p *Provider) Check(ctx context.Context) error {
	_, err := p.call(ctx, http.MethodGet, "/v2/sandboxes", map[string][]string{"limit": {"1"}}, nil, nil)
	return err
}

// idPattern is what an E2B sandbox ID may be: a host label.
var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

func handleID(h sbx.Handle) (string, error) { return sbx.HandleID(h, idPattern.MatchString) }

// Admit implements sbx.Admitter (remote.Service.Admit): only the
// service's templates, and a service that answers.
func (p *Provider) Admit(ctx context.Context, spec sbx.Spec) error {
	return p.service.Admit(ctx, Name, spec, p.Check)
}

// Create implements sbx.Provider: a sandbox of the E2B template
// spec.TemplateID, running once the API answers (lifecycle then waits for
// its envd through the bridge's /ready). A create whose context ended may
// have made a sandbox that no answer named: it is looked for and killed.
func (p *Provider) Create(ctx context.Context, spec sbx.Spec) (sbx.Instance, error) {
	if err := p.Admit(ctx, spec); err != nil {
		return sbx.Instance{}, err
	}
	sb, err := p.create(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			remote.Sweep(p, spec.SandboxID)
		}
		return sbx.Instance{}, err
	}
	if !idPattern.MatchString(sb.SandboxID) {
		p.kill(context.WithoutCancel(ctx), sb.SandboxID)
		return sbx.Instance{}, sbx.Errorf(sbx.EProvider, "e2b: the API named its new sandbox %q, which is no sandbox ID", sb.SandboxID)
	}
	p.reached(sb)
	return sbx.Instance{SandboxID: spec.SandboxID, ProviderSandboxID: sb.SandboxID, Status: sbx.InstanceRunning, Handle: sbx.IDHandle(sb.SandboxID)}, nil
}

// Pause implements sbx.Provider: E2B's pause, which keeps memory.
func (p *Provider) Pause(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	_, err = p.call(ctx, http.MethodPost, "/sandboxes/"+id+"/pause", nil, nil, nil)
	return remote.Fault(id, err)
}

// Resume implements sbx.Provider: a connect, which resumes a paused
// sandbox (201); one that was running (200) is a conflict.
func (p *Provider) Resume(ctx context.Context, h sbx.Handle) (sbx.Handle, error) {
	id, err := handleID(h)
	if err != nil {
		return h, err
	}
	var sb sandbox
	resp, err := p.call(ctx, http.MethodPost, "/sandboxes/"+id+"/connect", nil, timeoutBody{Timeout: p.leaseSeconds()}, &sb)
	if err != nil {
		return h, remote.Fault(id, err)
	}
	if resp.StatusCode == http.StatusOK {
		return h, sbx.Errorf(sbx.EConflict, "e2b: sandbox %s is running, not paused", id)
	}
	sb.SandboxID = id
	p.reached(sb)
	return h, nil
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
	p.forget(id)
	_, err := p.call(ctx, http.MethodDelete, "/sandboxes/"+id, nil, nil, nil)
	if sbx.ErrorCode(err) == sbx.ENotFound {
		return nil
	}
	return remote.Fault(id, err)
}

// List implements sbx.Provider: this instance's running and paused sandboxes.
func (p *Provider) List(ctx context.Context) ([]sbx.Instance, error) {
	list, err := p.list(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]sbx.Instance, 0, len(list))
	for _, sb := range list {
		if !p.ours(sb.Metadata) || !idPattern.MatchString(sb.SandboxID) {
			continue
		}
		st := sbx.InstanceRunning
		if sb.State == "paused" {
			st = sbx.InstancePaused
		}
		out = append(out, sbx.Instance{SandboxID: sb.Metadata[MetaSandbox], ProviderSandboxID: sb.SandboxID, Status: st, Handle: sbx.IDHandle(sb.SandboxID)})
	}
	return out, nil
}

// reached records how to reach a sandbox's envd from an answer that named
// its access token, and answers it.
func (p *Provider) reached(sb sandbox) *envd {
	e := p.newEnvd(sb)
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.envds[sb.SandboxID]; old != nil {
		old.set(e)
		return old
	}
	p.envds[sb.SandboxID] = e
	return e
}

// forget closes a sandbox's bridge, as it is killed.
func (p *Provider) forget(id string) {
	p.mu.Lock()
	delete(p.envds, id)
	p.mu.Unlock()
	p.leases.Killed(id)
	p.bridges.Close(id)
}

// AgentAddr implements sbx.AgentDialer: the address of the sandbox's
// bridge in serve's process, started on first use over its envd (after a
// restart, with envd's token read from the API).
func (p *Provider) AgentAddr(ctx context.Context, h sbx.Handle) (string, error) {
	id, err := handleID(h)
	if err != nil {
		return "", err
	}
	return p.bridges.Addr(id, func() (agentbridge.Remote, error) {
		p.mu.Lock()
		e := p.envds[id]
		p.mu.Unlock()
		if e != nil {
			return envdRemote{e}, nil
		}
		sb, err := p.get(ctx, id)
		if err != nil {
			return nil, remote.Fault(id, err)
		}
		if sb.EnvdAccessToken == "" {
			return nil, sbx.Errorf(sbx.EConflict, "e2b: sandbox %s is %s: its envd cannot be reached", id, cmp.Or(sb.State, "not running"))
		}
		sb.SandboxID = id
		return envdRemote{p.reached(sb)}, nil
	})
}
