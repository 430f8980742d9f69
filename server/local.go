package server

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"os/exec"
	"path/filepath"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/local"
	"github.com/sbxdev/sbx/local/gpu"
	"github.com/sbxdev/sbx/local/network"
	"github.com/sbxdev/sbx/local/runsc"
	"github.com/sbxdev/sbx/oci"
	"github.com/sbxdev/sbx/template"
)

// LocalConfig is how serve runs the local gVisor provider.
type LocalConfig struct {
	Engine       string       // local.EngineRunsc (default) or local.EngineRunc
	Runsc        string       // runsc binary; default <DataDir>/bin/runsc, then PATH
	Runc         string       // runc binary, for the runc engine; default runc on PATH
	TemplatesDir string       // default <DataDir>/templates
	Pool         netip.Prefix // sandbox addresses; default 10.201.0.0/16
	// Nameservers are the IPv4 nameservers sandboxes reach on port 53 and
	// the host resolves egress policies' domain names with; default
	// /etc/resolv.conf's.
	Nameservers []netip.Addr
	GPUs        string // a configured GPU inventory ("h100:2"); default: what nvidia-smi finds
	DiskMB      int64  // writable layer cap of a sandbox whose create names none; default 10 GiB
	MaxDiskMB   int64  // the largest cap a create may ask for; default DiskMB
	Agent       string // the binary run as every sandbox's agent; default local.DefaultAgent
	// Name keeps this server's host resources apart from another's on the
	// same host: it is the nftables table, the prefix of network namespaces
	// (/run/netns/<name>-<id>) and the cgroup parent. Default "sbx". At
	// start, a name another instance with another data dir holds, or a Pool
	// overlapping another instance's, is refused (network.New).
	Name string
	// DiskReserve is what creates and resumes leave free on the data dir's
	// filesystem (serve's default: 2 GiB); zero keeps only the sandboxes' caps.
	DiskReserve local.Reserve
	// PrivateRegistries are registries (host or host:port) tenants may
	// start sandboxes from images of although they are at private or
	// loopback addresses; any public one may be used.
	PrivateRegistries []string
	MaxImageMB        int64 // the largest image (its compressed layers) a create may pull; 0: no cap
}

// startLocal finds the engine (runsc, or runc) and, when it runs, builds the
// local provider over the data directory: the network, the GPU inventory,
// and the `base` template, built on first start. The engine status says
// what was found.
func startLocal(ctx context.Context, cfg Config, log *slog.Logger) (*local.Provider, apiv1.EngineStatus, error) {
	st, err := findEngine(ctx, cfg.Local, cfg.DataDir)
	if err != nil {
		return nil, st, err
	}
	if !st.Available {
		return nil, st, nil
	}
	lc := cfg.Local
	if lc.TemplatesDir == "" {
		lc.TemplatesDir = filepath.Join(cfg.DataDir, "templates")
	}
	// The network first: it claims the instance's name and pool on this
	// host (refusing ones another instance holds) before anything is built.
	net, err := network.New(network.Config{Pool: lc.Pool, StateDir: filepath.Join(cfg.DataDir, "network"), Table: lc.Name,
		Nameservers: lc.Nameservers, Log: log})
	if err != nil {
		return nil, st, err
	}
	go net.KeepCurrent(ctx) // the addresses of egress policies' domain names, looked up again every 30 s
	templates := template.Store{Dir: lc.TemplatesDir}
	if _, err := templates.Current("base"); err != nil {
		log.Info("first start: building the base template (debootstrap from the host's Debian mirror)", "dir", lc.TemplatesDir)
		w := &logWriter{log: log}
		if _, err := templates.BuildDebian(ctx, "base", template.DebianOptions{}, w); err != nil {
			return nil, st, fmt.Errorf("building the base template: %w", err)
		}
	}
	inv, err := gpuInventory(ctx, lc.GPUs)
	if err != nil {
		return nil, st, err
	}
	if lc.Agent == "" {
		if lc.Agent, err = local.DefaultAgent(cfg.DataDir); err != nil {
			return nil, st, err
		}
	}
	p, err := local.New(local.Config{DataDir: cfg.DataDir, Engine: st.Name, Runsc: st.Path, Runc: st.Path, Agent: lc.Agent, Templates: templates, Network: net,
		GPUs: gpu.NewPlacer(inv), DiskMB: lc.DiskMB, DiskReserve: lc.DiskReserve, CgroupParent: lc.Name,
		Registries: oci.New(lc.PrivateRegistries), MaxImageMB: lc.MaxImageMB})
	if err != nil {
		return nil, st, err
	}
	log.Info("local provider ready", "name", lc.Name, "engine", st.Name, "version", st.Version, "gpus", inv.String())
	return p, st, nil
}

// gpuInventory is the configured inventory, or what nvidia-smi finds.
func gpuInventory(ctx context.Context, configured string) (gpu.Inventory, error) {
	if configured != "" {
		return gpu.ParseInventory(configured)
	}
	return gpu.Discover(ctx)
}

// findEngine finds the engine's binary and checks that it runs; only an
// engine that is neither runsc nor runc is an error.
func findEngine(ctx context.Context, lc LocalConfig, dataDir string) (apiv1.EngineStatus, error) {
	st := apiv1.EngineStatus{Name: cmp.Or(lc.Engine, local.EngineRunsc)}
	var path string
	var err error
	switch st.Name {
	case local.EngineRunsc:
		path, err = runsc.Find(lc.Runsc, dataDir)
	case local.EngineRunc:
		path, err = exec.LookPath(cmp.Or(lc.Runc, "runc"))
	default:
		return st, fmt.Errorf("--engine %q: the local provider runs sandboxes with runsc or runc", st.Name)
	}
	if err == nil {
		st.Path = path
		st.Version, err = runsc.Version(ctx, st.Name, path)
	}
	if err != nil {
		st.Detail = err.Error()
		return st, nil
	}
	st.Available, st.Detail = true, fmt.Sprintf("%s %s at %s", st.Name, st.Version, path)
	return st, nil
}

// logWriter turns a build's progress lines into log lines.
type logWriter struct {
	log *slog.Logger
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.log.Info("template build", "progress", string(p))
	return len(p), nil
}
