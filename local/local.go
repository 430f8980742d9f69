// Package local is sbx's default provider: every sandbox runs in gVisor, as
// an OCI bundle run by runsc on this host, in its own network namespace.
// The template's tree is the read-only lower layer of the sandbox's root;
// writes go to a size-capped upper layer kept in the sandbox's directory.
// Hibernate checkpoints a sandbox into that directory and resume restores it.
// A host may run its sandboxes with runc instead, for trusted work (see
// EngineRunc): what differs between the two is behind the engine interface
// (engine.go), chosen once in New.
//
// Per sandbox, <DataDir>/sandboxes/<id>/ holds sandbox.json (what the
// provider knows of it, so that a restarted sbx finds it again), the bundle,
// output.log (the sandbox's own output with the provider's lines between)
// and, while hibernated, the checkpoint image.
package local

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/keyed"
	"github.com/sbxdev/sbx/local/gpu"
	"github.com/sbxdev/sbx/local/network"
	"github.com/sbxdev/sbx/local/runsc"
	"github.com/sbxdev/sbx/oci"
	"github.com/sbxdev/sbx/template"
)

// Name is the provider's name in the ledger.
const Name = "local"

// Config is where the provider keeps its sandboxes and what it runs them with.
type Config struct {
	DataDir    string // sandboxes live in <DataDir>/sandboxes, the engine's state in <DataDir>/<engine>
	Engine     string // EngineRunsc (the default) or EngineRunc
	Runsc      string // the runsc binary
	Runc       string // the runc binary, when Engine is runc; default runc on PATH
	Templates  template.Store
	Network    *network.Manager // each sandbox's network, which enforces its egress policy (egress.go); nil runs sandboxes without one
	GPUs       *gpu.Placer      // nil: this host offers no GPUs
	DiskMB     int64            // the cap of a sandbox's writable layer when its spec names none; default 10 GiB
	WatchEvery time.Duration    // how often Watch looks for sandboxes that died; default 1 s
	// Agent is the binary whose `BIN agent …` is every sandbox's first
	// process (DefaultAgent: what serve runs), serving commands, files and
	// PTYs on apiv1.AgentPort. Only the first process and its descendants
	// survive hibernation: gVisor kills processes started by `runsc exec`
	// when it restores a sandbox.
	Agent string
	// Init is the first process when there is no Agent; default an idle one.
	Init []string
	// CgroupParent holds every sandbox's cgroup, in each hierarchy; default
	// "sbx". Whatever is under it belongs to this provider.
	CgroupParent string
	// DiskReserve is what creates and resumes leave free on the data dir's
	// filesystem once every live sandbox has written its layer to its cap
	// (disk.go); zero: nothing beyond those caps.
	DiskReserve Reserve
	// Registries are those tenants may start sandboxes from images of
	// (image.go); MaxImageMB caps an image's compressed layers (0: no cap).
	Registries *oci.Registries // nil: images are refused
	MaxImageMB int64
}

// Provider runs sandboxes with its engine: runsc, or runc.
type Provider struct {
	layout
	cfg    Config
	engine engine      // what differs between runsc and runc (engine.go)
	rs     runsc.Runsc // the engine's binary
	agent  string      // the installed copy of Config.Agent
	ops    keyed.Mutex // by provider ID, held by each operation on that sandbox
	claims sync.Mutex  // held while a new sandbox's ID is checked and claimed
	pulls  keyed.Mutex // by image digest, held while one is pulled
	tokens sync.Map    // provider ID → *tokenWatch, while its agent may not have taken its token

	diskMu  sync.Mutex             // held while the disk is measured and a share admitted
	pending map[string]pendingDisk // provider ID → a share admitted, not yet held by a recorded sandbox

	hostPaths []hostPath // what scrub replaces: findHostPaths, once
	treeSizes sizeCache  // of templates' versions (templates.go)
}

// New returns the provider, creating its directories.
func New(cfg Config) (*Provider, error) {
	if cfg.DiskMB == 0 {
		cfg.DiskMB = 10 << 10
	}
	if len(cfg.Init) == 0 {
		cfg.Init = []string{"/bin/sleep", "infinity"}
	}
	if cfg.CgroupParent == "" {
		cfg.CgroupParent = "sbx"
	}
	if cfg.WatchEvery == 0 {
		cfg.WatchEvery = time.Second
	}
	if cfg.GPUs == nil {
		cfg.GPUs = gpu.NewPlacer(nil)
	}
	l := layout{dataDir: cfg.DataDir, cgroupParent: cfg.CgroupParent}
	var e engine
	switch cfg.Engine {
	case "", EngineRunsc:
		cfg.Engine, e = EngineRunsc, newRunsc(l, cfg.Runsc)
	case EngineRunc:
		cfg.Runc = cmp.Or(cfg.Runc, "runc")
		e = newRunc(l, cfg.Runc)
	default:
		return nil, fmt.Errorf("engine %q is not one the local provider runs (runsc or runc)", cfg.Engine)
	}
	p := &Provider{layout: l, cfg: cfg, engine: e, rs: e.command(), pending: map[string]pendingDisk{}}
	p.hostPaths = p.findHostPaths()
	for _, d := range []string{p.rs.Root, p.sandboxesDir()} { // 0700 even when an older sbx made them
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, err
		}
	}
	if cfg.Agent != "" {
		var err error
		if p.agent, err = installAgentFile(cfg.DataDir, cfg.Agent); err != nil {
			return nil, err
		}
	}
	if err := p.adopt(); err != nil {
		return nil, err
	}
	if err := p.mountVolumes(); err != nil {
		return nil, fmt.Errorf("mounting volumes: %w", err)
	}
	if err := p.removeUnusedAgents(); err != nil {
		return nil, fmt.Errorf("removing old agent binaries: %w", err)
	}
	return p, nil
}

// adopt checks that the sandboxes already on this host run with this
// provider's engine, and registers the GPU shares they recorded.
func (p *Provider) adopt() error {
	ids, err := p.sandboxIDs()
	if err != nil {
		return err
	}
	for _, id := range ids {
		m, err := p.readMeta(id)
		if err != nil {
			continue // no record: List reports it unowned and reconciliation removes it
		}
		if engine := cmp.Or(m.Engine, EngineRunsc); engine != p.engine.name() {
			return fmt.Errorf("sandbox %s on this host runs with %s, not %s: kill the host's sandboxes before changing its engine", id, engine, p.engine.name())
		}
		if m.GPUPlacement != nil {
			if err := p.cfg.GPUs.Adopt(id, *m.GPUPlacement); err != nil {
				return fmt.Errorf("sandbox %s: %w", id, err)
			}
		}
	}
	return nil
}

// Name implements sbx.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements sbx.Provider.
func (p *Provider) Capabilities() sbx.Capabilities {
	checkpoints := p.engine.hibernate() == nil
	return sbx.Capabilities{MemoryPause: true, Hibernate: checkpoints, Snapshots: checkpoints, Fork: checkpoints, Volumes: true,
		GPU: p.engine.shareGPUs() == nil && len(p.cfg.GPUs.Inventory()) > 0}
}

// The states a sandbox's record can be in.
const (
	stateCreating   = "creating"
	stateRunning    = "running"
	statePaused     = "paused"
	stateHibernated = "hibernated"
)

// meta is what the provider records about a sandbox, in its directory.
type meta struct {
	SandboxID       string          `json:"sandbox_id"`
	ProviderID      string          `json:"provider_id"`
	Template        string          `json:"template"`
	TemplateVersion string          `json:"template_version"`
	Engine          string          `json:"engine"`
	Flags           []string        `json:"flags"` // the per-sandbox runsc flags, reused by checkpoint and restore
	State           string          `json:"state"`
	MemoryMB        int64           `json:"memory_mb"`
	DiskMB          int64           `json:"disk_mb,omitempty"` // the writable layer's cap; 0 in records from before sandboxes had sizes
	GPU             *sbx.GPURequest `json:"gpu,omitempty"`
	GPUPlacement    *gpu.Placement  `json:"gpu_placement,omitempty"` // while it holds GPU shares
	Created         time.Time       `json:"created"`
}

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// begin holds a sandbox's operation lock until end is called, or returns
// ctx's error if ctx ends first. Operations on one sandbox arrive one at a
// time; the lock keeps List and Watch from judging a sandbox halfway through
// one.
func (p *Provider) begin(ctx context.Context, id string) (end func(), err error) {
	if err := p.ops.Lock(ctx, id); err != nil {
		return nil, err
	}
	return func() { p.ops.Unlock(id) }, nil
}

// idle runs f under a sandbox's operation lock, unless an operation on the
// sandbox is in progress, and reports whether it did.
func (p *Provider) idle(id string, f func()) bool {
	if !p.ops.TryLock(id) {
		return false
	}
	defer p.ops.Unlock(id)
	f()
	return true
}

// layout is where a host keeps its sandboxes' files and cgroups; the
// provider and its engine share it.
type layout struct {
	dataDir      string
	cgroupParent string
}

func (l layout) sandboxesDir() string { return filepath.Join(l.dataDir, "sandboxes") }

func (l layout) dir(id string) string { return filepath.Join(l.sandboxesDir(), id) }

func (l layout) metaFile(id string) string { return filepath.Join(l.dir(id), "sandbox.json") }

func (l layout) outputFile(id string) string { return filepath.Join(l.dir(id), "output.log") }

func (l layout) bundleDir(id string) string { return filepath.Join(l.dir(id), "bundle") }

func (l layout) imageDir(id string) string { return filepath.Join(l.dir(id), "checkpoint") }

func (p *Provider) readMeta(id string) (meta, error) {
	var m meta
	err := readJSON(p.metaFile(id), &m)
	return m, err
}

func (p *Provider) writeMeta(m meta) error { return writeJSON(p.metaFile(m.ProviderID), m) }

func instance(m meta, status sbx.InstanceStatus) sbx.Instance {
	return sbx.Instance{SandboxID: m.SandboxID, ProviderSandboxID: m.ProviderID, Status: status, Handle: sbx.IDHandle(m.ProviderID)}
}

func handleID(h sbx.Handle) (string, error) { return sbx.HandleID(h, idPattern.MatchString) }

// writeJSON replaces a file atomically, so a crash leaves the old or the new.
func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
