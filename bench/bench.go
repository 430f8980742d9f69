// Package bench is sbx's benchmark harness. Every figure is printed next to a
// baseline measured in the same run, so that a slow or busy host shows in
// both and the ratio stays meaningful.
//
// Lifecycle (`sbx bench lifecycle`) measures the local gVisor provider set up
// as `sbx serve` sets it up (its own network manager, nftables table, address
// pool, cgroup parent and data directory, so that it disturbs nothing else on
// the host):
//
//   - create→running over N sandboxes, against `runsc run --detach` and
//     `runc run --detach` of a bundle on the same template tree with the same
//     limits (and `docker run` of the same tree when a dockerd answers);
//   - when a Docker daemon answers at Config.DockerHost, the docker
//     provider's create→ready, pause and resume against `docker run`,
//     pause and unpause of the same image through the Engine API;
//   - pause and resume, against `runsc pause` and `runsc resume`;
//   - with an E2B API (Config.E2B), the e2b provider's create→ready, pause
//     and resume against direct calls of that API (e2bprovider.go);
//   - hibernate and wake of sandboxes whose first process holds 64 MB and
//     512 MB in a tmpfs, against `runsc checkpoint` and `runsc restore`;
//   - host memory per idle sandbox with 50 and 200 of them held at once.
//
// Kubernetes (`sbx bench lifecycle --provider kubernetes`) measures the
// kubernetes provider alone, against bare gVisor pods of the same cluster
// (kubernetes.go).
//
// Everything a run creates is removed when it ends, also on error or when
// its context is cancelled.
package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/docker"
	"github.com/sbxdev/sbx/local"
	"github.com/sbxdev/sbx/local/network"
	"github.com/sbxdev/sbx/local/runsc"
	"github.com/sbxdev/sbx/template"
)

// Config is what Lifecycle measures and with what.
type Config struct {
	Templates template.Store
	Template  string // default "base"
	Runsc     string // the runsc binary
	N         int    // sandboxes created per runtime, and pause/resume rounds; default 20
	Rounds    int    // hibernate/wake rounds per size; default 4
	SizesMB   []int  // memory held for hibernate/wake; default 64 and 512
	Idle      []int  // idle sandboxes held at once, each count measured; default 50 and 200
	SkipIdle  bool
	Progress  io.Writer // one line per step; default io.Discard

	// Agent is the binary whose `BIN agent …` is the sandboxes' first
	// process; default the agent serve runs (local.DefaultAgent). Exec
	// needs the sbx binary itself: it runs `sbx bench spawn` in its sandbox.
	Agent string
	// Exec only: round trips of `true`; the MB a command writes; the MB of
	// the file uploaded and downloaded. Defaults 200, 100 and 256; each
	// transfer is timed Rounds times.
	Calls, OutputMB, FileMB int

	// SDK only: the directory of the SDKs (sdk/ of the repository), and
	// the interpreters of their bench scripts (default node and python3).
	SDKDir, Node, Python string

	// Name keeps this run apart from others on the host: it is the
	// nftables table, the cgroup parent (and, with "raw" after it, the
	// baselines' cgroup parent) and the prefix of network namespaces.
	// Default "sbxbench". Pool is the sandboxes' addresses; default
	// 10.238.0.0/16.
	Name string
	Pool netip.Prefix

	// DockerHost is the Docker daemon of the docker provider's contender
	// and of the `docker run` baselines (unix:///path or tcp://host:port);
	// default docker.DefaultHost. Where none answers they are skipped.
	DockerHost string

	// E2B is the E2B API of the e2b provider's contender and of its
	// baseline's direct calls; without an API URL they are skipped.
	E2B E2BConfig

	// Kubernetes is the cluster of the kubernetes contender, which
	// Kubernetes measures alone (kubernetes.go).
	Kubernetes KubernetesConfig
}

// Resources of every sandbox and baseline container, except that those
// holding memory for hibernation get that much more.
const (
	milliCPU = 1000
	memoryMB = 512
	pidsMax  = 4096
)

func (c *Config) defaults() {
	if c.Template == "" {
		c.Template = "base"
	}
	if c.N <= 0 {
		c.N = 20
	}
	if c.Rounds <= 0 {
		c.Rounds = 4
	}
	if c.SizesMB == nil {
		c.SizesMB = []int{64, 512}
	}
	if c.Idle == nil {
		c.Idle = []int{50, 200}
	}
	if c.Calls <= 0 {
		c.Calls = 200
	}
	if c.OutputMB <= 0 {
		c.OutputMB = 100
	}
	if c.FileMB <= 0 {
		c.FileMB = 256
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Name == "" {
		c.Name = "sbxbench"
	}
	if c.DockerHost == "" {
		c.DockerHost = docker.DefaultHost
	}
	if !c.Pool.IsValid() {
		c.Pool = netip.MustParsePrefix("10.238.0.0/16")
	}
}

// lab is one run: the local provider under test and the baselines' tools,
// all under one temporary directory.
type lab struct {
	cfg  Config
	dir  string
	tag  string // in every ID of the run
	tmpl template.Template
	net  *network.Manager
	raw  rawRunsc
	runc *rawRunc   // nil: runc is not installed
	dock *dockerCLI // nil: no dockerd answers, for the reason in noDocker
	dk   *dockerLab // nil: no Docker daemon answers, for the reason in noDk
	main *local.Provider

	noDocker, noDk string

	mu        sync.Mutex
	providers []*local.Provider
	seq       int
}

// Lifecycle runs the lifecycle benchmark. It returns what it measured, with
// the table filled in, also when it stops on an error.
func Lifecycle(ctx context.Context, cfg Config) (r *Report, err error) {
	cfg.defaults()
	r, tmpl, err := newReport(ctx, cfg)
	if err != nil {
		return r, err
	}
	l := &lab{cfg: cfg, tmpl: tmpl}
	if l.dir, err = os.MkdirTemp("", "sbx-bench-"); err != nil {
		return r, err
	}
	if l.cfg.Agent == "" {
		if l.cfg.Agent, err = local.DefaultAgent(l.dir); err != nil {
			return r, err
		}
	}
	r.Load = "load average " + loadAverage() + " at start"
	defer func() {
		r.Load += ", " + loadAverage() + " at end"
		l.cfg.progress("cleanup: removing every sandbox, container, network and cgroup of the run")
		err = errors.Join(err, l.close())
		r.Rows, r.Notes = r.rows(), r.notes()
	}()
	if err := l.open(); err != nil {
		return r, err
	}
	phases := []func(context.Context, *Report) error{l.create, l.pause, l.e2bPhase, l.hibernate}
	if !cfg.SkipIdle {
		phases = append(phases, l.idle)
	}
	for _, phase := range phases {
		if err := phase(ctx, r); err != nil {
			if ctx.Err() != nil { // what failed failed for that
				return r, fmt.Errorf("stopped: %w", context.Cause(ctx))
			}
			return r, err
		}
	}
	return r, nil
}

// newReport starts a report of a run with cfg: the date, the host, runsc's
// version and the template's.
func newReport(ctx context.Context, cfg Config) (*Report, template.Template, error) {
	r := &Report{Date: time.Now().UTC().Format("2006-01-02"), Host: host()}
	tmpl, err := cfg.Templates.Current(cfg.Template)
	if err != nil {
		return r, tmpl, fmt.Errorf("templates in %s: %w", cfg.Templates.Dir, err)
	}
	r.Template = tmpl.Name + " " + tmpl.Version
	r.Runsc, err = runsc.Version(ctx, "runsc", cfg.Runsc)
	return r, tmpl, err
}

// open sets up the provider's network and the baselines.
func (l *lab) open() error {
	var b [3]byte
	rand.Read(b[:])
	l.tag = hex.EncodeToString(b[:])
	var err error
	l.net, err = network.New(network.Config{Pool: l.cfg.Pool, StateDir: filepath.Join(l.dir, "network"), Table: l.cfg.Name})
	if err != nil {
		return err
	}
	l.raw = rawRunsc{path: l.cfg.Runsc, dir: filepath.Join(l.dir, "raw-runsc"), cgroupParent: l.cfg.Name + "raw"}
	if path, ok := findRunc(); ok {
		l.runc = &rawRunc{path: path, dir: filepath.Join(l.dir, "raw-runc"), cgroupParent: l.cfg.Name + "raw"}
	}
	l.dock, l.noDocker = findDockerCLI(l.tag, l.cfg.DockerHost)
	l.dk, l.noDk = l.openDocker()
	l.main, err = l.provider(nil)
	return err
}

// provider returns a new local provider, set up as serve sets it up, whose
// sandboxes start with init (nil: the agent, when the run has one, or else
// the provider's default idle process).
func (l *lab) provider(init []string) (*local.Provider, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cfg := local.Config{DataDir: filepath.Join(l.dir, fmt.Sprintf("local-%d", len(l.providers))), Runsc: l.cfg.Runsc,
		Templates: l.cfg.Templates, Network: l.net, Init: init, CgroupParent: l.cfg.Name}
	if init == nil {
		cfg.Agent = l.cfg.Agent
	}
	p, err := local.New(cfg)
	if err == nil {
		l.providers = append(l.providers, p)
	}
	return p, err
}

// id returns a new sandbox or container ID, unique on the host. All have
// the same length: runsc takes an ID for any container whose ID it begins
// (`runsc delete --force x1` deletes x10 when there is no x1).
func (l *lab) id(kind string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return fmt.Sprintf("bench-%s-%s%05d", l.tag, kind[:1], l.seq)
}

// createLocal creates a sandbox of memory MB and returns how long Create took.
func (l *lab) createLocal(ctx context.Context, p *local.Provider, id string, memMB int64) (sbx.Handle, time.Duration, error) {
	spec := sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: id, TemplateID: l.cfg.Template,
		Resources: sbx.Resources{MilliCPU: milliCPU, MemoryMB: memMB}, AccessToken: rand.Text() + rand.Text()}
	start := time.Now()
	in, err := p.Create(ctx, spec)
	return in.Handle, time.Since(start), err
}

// killLocal removes a sandbox of the main provider.
func (l *lab) killLocal(ctx context.Context, id string) error {
	return l.main.Kill(ctx, sbx.IDHandle(id))
}

// inTurn runs step(0..n-1) for round i, starting at step i mod n, so that no
// contender always goes first (after the previous round's cleanup) or last.
func inTurn(i, n int, step func(k int) error) error {
	for j := range n {
		if err := step((i + j) % n); err != nil {
			return err
		}
	}
	return nil
}

// progress writes one dated line of progress.
func (c *Config) progress(format string, args ...any) {
	fmt.Fprintf(c.Progress, "bench %s: "+format+"\n", append([]any{time.Now().Format("15:04:05.0")}, args...)...)
}

// close removes what the run made: sandboxes, baseline containers, the
// docker images, network namespaces and the nftables table, cgroups, leftover
// processes and mounts of runsc, and the directory. It goes on past errors.
func (l *lab) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var errs []error
	for _, p := range l.providers {
		list, err := p.List(ctx)
		errs = append(errs, err)
		errs = append(errs, parallel(len(list), 4, func(i int) error { return p.Kill(ctx, list[i].Handle) }))
	}
	errs = append(errs, l.raw.removeAll(ctx))
	if l.runc != nil {
		errs = append(errs, l.runc.removeAll(ctx))
	}
	if l.dock != nil {
		errs = append(errs, l.dock.removeAll(ctx))
	}
	if l.dk != nil {
		errs = append(errs, l.dk.removeAll(ctx))
	}
	if l.net != nil {
		list, err := l.net.List()
		errs = append(errs, err)
		for _, a := range list {
			errs = append(errs, l.net.Detach(ctx, a.ID))
		}
		errs = append(errs, deleteTable(ctx, l.cfg.Name))
	}
	errs = append(errs, killProcessesUnder(l.dir), unmountUnder(l.dir))
	errs = append(errs, removeCgroupParent(l.cfg.Name), removeCgroupParent(l.cfg.Name+"raw"))
	errs = append(errs, os.RemoveAll(l.dir))
	return errors.Join(errs...)
}

// parallel runs f(0..n-1) on up to workers goroutines and joins the errors.
func parallel(n, workers int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				errs[i] = f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// loadAverage is the host's 1-minute load average: other work on the host
// slows the baselines too, but not necessarily by the same ratio.
func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	first, _, _ := strings.Cut(string(data), " ")
	return first
}

func host() string {
	mem := readMeminfo()["MemTotal"]
	return fmt.Sprintf("%d cores, %.0f GiB", runtime.NumCPU(), float64(mem)/(1<<30))
}
