// Package docker is the provider whose sandboxes are containers of a Docker
// daemon, reached through the Docker Engine API spoken as plain HTTP over
// the daemon's Unix socket (or TCP) with net/http. Not the official Go
// client: it would bring a large module graph (the moby tree, containerd's
// and OpenTelemetry's modules) into the sbx binary for the dozen calls made
// here.
//
// A sandbox is one container on a bridge network, named
// <instance>-<provider ID> and labelled with its sbx UUID, its provider ID
// and the serve instance's name, so that List (and so reconcile) sees only
// this instance's containers and several serves share a daemon. Its first
// process is sbx's agent, bind-mounted read-only from the host, which
// reads its access token from the container's stdin, written once through
// an attach and closed (agent.go). It starts from an image of the daemon
// named as the template, or from a template tree of sbx's store imported
// once as the image sbx-template/<name>:<version> (image.go). Pause and
// resume are the cgroup freezer (docker pause/unpause); there is no
// hibernation, snapshot or fork.
package docker

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/keyed"
	"github.com/sbxdev/sbx/template"
)

// Name is the provider's name in the ledger.
const Name = "docker"

// DefaultHost is the daemon's socket when nothing names another.
const DefaultHost = "unix:///var/run/docker.sock"

// The labels every sandbox's container carries.
const (
	LabelSandbox  = "dev.sbx.sandbox"     // the sbx UUID
	LabelID       = "dev.sbx.provider-id" // the provider sandbox ID
	LabelInstance = "dev.sbx.instance"    // the serve instance's name (Config.Name)
)

// Config is the daemon the provider uses and how it runs sandboxes there.
type Config struct {
	Host string // unix:///path or tcp://host:port; default DefaultHost
	// Name is the serve instance's: its containers are named
	// <Name>-<provider ID> and labelled with it. Default "sbx".
	Name string
	// Runtime is the OCI runtime the daemon runs sandboxes with ("runsc"
	// where gVisor is registered with it); "": the daemon's default.
	Runtime string
	// Network is the bridge network of the sandboxes; default "bridge",
	// the daemon's own, whose addresses this host routes to.
	Network string
	// Agent is the binary run as every sandbox's first process (`BIN agent
	// …`), bind-mounted read-only at AgentMount: a path on the daemon's
	// host (DefaultAgent of package local: what serve runs).
	Agent string
	// Init is the first process when there is no Agent; default an idle one.
	Init []string
	// Templates is sbx's template store: a template that is no image of
	// the daemon is imported from there.
	Templates template.Store
	// WatchEvery is how often Watch looks for containers that ended; default 1 s.
	WatchEvery time.Duration
}

// Provider runs sandboxes as containers of one Docker daemon.
type Provider struct {
	cfg     Config
	api     *Engine
	ops     keyed.Mutex // by provider ID, held by each operation on that sandbox
	imports keyed.Mutex // by image reference, held while a template is imported
	addrs   sync.Map    // provider ID → its container's IP address
}

// New returns the provider. It does not reach the daemon: Check says
// whether it answers.
func New(cfg Config) (*Provider, error) {
	cfg.Host = cmp.Or(cfg.Host, DefaultHost)
	cfg.Name = cmp.Or(cfg.Name, "sbx")
	cfg.Network = cmp.Or(cfg.Network, "bridge")
	if cfg.WatchEvery == 0 {
		cfg.WatchEvery = time.Second
	}
	if len(cfg.Init) == 0 {
		cfg.Init = []string{"/bin/sleep", "infinity"}
	}
	if !namePattern.MatchString(cfg.Name) {
		return nil, fmt.Errorf("instance name %q cannot name containers", cfg.Name)
	}
	api, err := NewEngine(cfg.Host)
	if err != nil {
		return nil, err
	}
	return &Provider{cfg: cfg, api: api}, nil
}

var (
	idPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)
	namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}$`)
)

// Name implements sbx.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements sbx.Provider: pause is the freezer, which keeps
// memory; nothing is checkpointed.
func (p *Provider) Capabilities() sbx.Capabilities { return sbx.Capabilities{MemoryPause: true} }

// Check implements sbx.Checker: the daemon answers its ping and speaks an
// API version sbx does.
func (p *Provider) Check(ctx context.Context) error {
	if err := p.api.ping(ctx); err != nil {
		return err
	}
	_, err := p.api.negotiate(ctx)
	return err
}

// container is a sandbox's container name.
func (p *Provider) container(id string) string { return p.cfg.Name + "-" + id }

func handleID(h sbx.Handle) (string, error) { return sbx.HandleID(h, idPattern.MatchString) }

// begin holds a sandbox's operation lock until end is called.
func (p *Provider) begin(ctx context.Context, id string) (end func(), err error) {
	if err := p.ops.Lock(ctx, id); err != nil {
		return nil, err
	}
	return func() { p.ops.Unlock(id) }, nil
}

// Admit implements sbx.Admitter: a template that is neither an image of
// the daemon nor one of the store is refused before any row is written.
func (p *Provider) Admit(ctx context.Context, spec sbx.Spec) error {
	if err := unsupported(spec); err != nil {
		return err
	}
	_, err := p.source(ctx, spec, false)
	return err
}

// unsupported refuses what a docker sandbox cannot start with.
func unsupported(spec sbx.Spec) error {
	if spec.Snapshot != nil || spec.Image != nil || len(spec.Volumes) > 0 || spec.Resources.GPU != nil {
		return sbx.Errorf(sbx.EUnsupported, "provider docker starts sandboxes from templates only: no snapshots, images, volumes or GPUs")
	}
	return nil
}

// inspect is what the provider reads of GET /containers/{id}/json.
type inspect struct {
	ID    string `json:"Id"`
	State struct {
		Status    string
		Running   bool
		Paused    bool
		OOMKilled bool
		ExitCode  int
		Error     string
	}
	Config struct {
		Labels map[string]string
	}
	NetworkSettings struct {
		IPAddress string
		Networks  map[string]struct{ IPAddress string }
	}
}

func (p *Provider) inspect(ctx context.Context, id string) (inspect, error) {
	var c inspect
	err := p.api.Call(ctx, "GET", "/containers/"+url.PathEscape(p.container(id))+"/json", nil, nil, &c)
	if IsStatus(err, 404) {
		return c, sbx.Errorf(sbx.ENotFound, "sandbox %s has no container in the Docker daemon", id)
	}
	if err == nil && c.Config.Labels[LabelInstance] != p.cfg.Name {
		return c, sbx.Errorf(sbx.ENotFound, "container %s is not one of this sbx's sandboxes", p.container(id))
	}
	return c, err
}

// Pause implements sbx.Provider: docker pause, the cgroup freezer.
func (p *Provider) Pause(ctx context.Context, h sbx.Handle) error {
	return p.freeze(ctx, h, "pause", "running", func(running, paused bool) bool { return running && !paused })
}

// Resume implements sbx.Provider: docker unpause; the handle stays.
func (p *Provider) Resume(ctx context.Context, h sbx.Handle) (sbx.Handle, error) {
	if err := p.freeze(ctx, h, "unpause", "paused", func(_, paused bool) bool { return paused }); err != nil {
		return sbx.Handle{}, err
	}
	return h, nil
}

// freeze asks the daemon to pause or unpause the container of h (action),
// which must be in state want (from checks its running and paused flags),
// else it is a 409 that says what it is.
func (p *Provider) freeze(ctx context.Context, h sbx.Handle, action, want string, from func(running, paused bool) bool) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	end, err := p.begin(ctx, id)
	if err != nil {
		return err
	}
	defer end()
	c, err := p.inspect(ctx, id)
	if err != nil {
		return err
	}
	if !from(c.State.Running, c.State.Paused) {
		return sbx.Errorf(sbx.EConflict, "sandbox %s is %s, not %s", id, c.State.Status, want)
	}
	return p.api.Call(ctx, "POST", "/containers/"+url.PathEscape(p.container(id))+"/"+action, nil, nil, nil)
}

// Kill implements sbx.Provider: the container is removed, forced, with its
// anonymous volumes; one already gone is fine.
func (p *Provider) Kill(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	end, err := p.begin(ctx, id)
	if err != nil {
		return err
	}
	defer end()
	return p.remove(ctx, id)
}

// remove deletes a sandbox's container, if it has one.
func (p *Provider) remove(ctx context.Context, id string) error {
	p.addrs.Delete(id)
	c, err := p.inspect(ctx, id)
	if sbx.ErrorCode(err) == sbx.ENotFound {
		return nil // gone, or another instance's: not this one's to remove
	}
	if err != nil {
		return err
	}
	err = p.api.Call(ctx, "DELETE", "/containers/"+url.PathEscape(c.ID), url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
	if IsStatus(err, 404) {
		return nil
	}
	return err
}

// listed is what the provider reads of GET /containers/json.
type listed struct {
	ID     string `json:"Id"`
	State  string
	Labels map[string]string
}

// containers lists this instance's containers, of every state, or those
// whose status is one of status.
func (p *Provider) containers(ctx context.Context, status ...string) ([]listed, error) {
	filters := map[string][]string{"label": {LabelInstance + "=" + p.cfg.Name}}
	if len(status) > 0 {
		filters["status"] = status
	}
	f, _ := jsonString(filters)
	var out []listed
	err := p.api.Call(ctx, "GET", "/containers/json", url.Values{"all": {"1"}, "filters": {f}}, nil, &out)
	return out, err
}

// List implements sbx.Provider: every container labelled with this
// instance's name, running, paused, or dead (any other state). A container
// whose sandbox an operation is changing is left to that operation.
func (p *Provider) List(ctx context.Context) ([]sbx.Instance, error) {
	cs, err := p.containers(ctx)
	if err != nil {
		return nil, err
	}
	var out []sbx.Instance
	for _, c := range cs {
		id := c.Labels[LabelID]
		if !idPattern.MatchString(id) {
			continue // labelled by hand: no handle can name it
		}
		st := sbx.InstanceDead
		switch c.State {
		case "running":
			st = sbx.InstanceRunning
		case "paused":
			st = sbx.InstancePaused
		}
		if !p.ops.TryLock(id) {
			continue
		}
		p.ops.Unlock(id)
		out = append(out, sbx.Instance{SandboxID: c.Labels[LabelSandbox], ProviderSandboxID: id, Status: st, Handle: sbx.IDHandle(id)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProviderSandboxID < out[j].ProviderSandboxID })
	return out, nil
}

// AgentAddr implements sbx.AgentDialer: the agent listens on the
// container's own address.
func (p *Provider) AgentAddr(ctx context.Context, h sbx.Handle) (string, error) {
	if p.cfg.Agent == "" {
		return "", sbx.Errorf(sbx.EUnsupported, "this docker provider runs no agent in its sandboxes")
	}
	return p.PortAddr(ctx, h, apiv1.AgentPort)
}

// PortAddr implements sbx.PortDialer: the container's address on its
// bridge network, which this host routes to.
func (p *Provider) PortAddr(ctx context.Context, h sbx.Handle, port int) (string, error) {
	id, err := handleID(h)
	if err != nil {
		return "", err
	}
	if a, ok := p.addrs.Load(id); ok {
		return net.JoinHostPort(a.(string), strconv.Itoa(port)), nil
	}
	c, err := p.inspect(ctx, id)
	if err != nil {
		return "", err
	}
	ip := p.ipOf(c)
	if ip == "" {
		return "", sbx.Errorf(sbx.ENotFound, "sandbox %s has no address on network %s (it is %s)", id, p.cfg.Network, c.State.Status)
	}
	p.addrs.Store(id, ip)
	return net.JoinHostPort(ip, strconv.Itoa(port)), nil
}

func (p *Provider) ipOf(c inspect) string {
	if n, ok := c.NetworkSettings.Networks[p.cfg.Network]; ok && n.IPAddress != "" {
		return n.IPAddress
	}
	return c.NetworkSettings.IPAddress
}
