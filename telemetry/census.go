package telemetry

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sbxdev/sbx"
)

// Census is the metrics read at each scrape: what the ledger counts
// (sandboxes by provider and state, warm pools, template builds) and this
// host's capacity against what its sandboxes hold.
type Census struct {
	Ledger Counter // nil: no ledger metrics
	Host   Host    // nil: no host metrics but CPUs and memory
	// CPUs and MemoryBytes are this host's (0: unknown, not served).
	CPUs        int
	MemoryBytes int64
	// Addresses, when set, answers the sandbox addresses of the default
	// provider's network: how many are in use and how many there are (ok:
	// whether it has such a network).
	Addresses func() (used, total int, ok bool)
	Log       *slog.Logger
}

// Counter counts what the ledger holds; *ledger.Store is one.
type Counter interface {
	Counts(ctx context.Context) (Counts, error)
}

// Counts is what Counter answers.
type Counts struct {
	Sandboxes []SandboxCount // sandboxes not yet final, and every final one, by provider and state
	Pools     []PoolSize
	Builds    map[sbx.BuildState]int // template builds by state, ever
}

// SandboxCount is how many sandboxes of one provider are in one state.
type SandboxCount struct {
	Provider string
	State    sbx.State
	N        int
}

// PoolSize is a template's warm pool: its bounds and its members by state.
type PoolSize struct {
	Template           string
	MinReady, MaxReady int
	Members            map[sbx.State]int
}

// Host is what the lifecycle says of this host; *lifecycle.Manager is one.
type Host interface {
	HostUse(ctx context.Context) (sbx.PlanUse, error)
	Disk(ctx context.Context) (d sbx.Disk, ok bool, err error)
}

// scrapeTimeout bounds the reads of one scrape.
const scrapeTimeout = 5 * time.Second

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
}

// The census's metrics.
var (
	sandboxesDesc   = desc("sandboxes", "Sandboxes by provider and state (killed and failed: every one ever).", "provider", "state")
	poolMembersDesc = desc("pool_members", "Members of a template's warm pool, by template and state.", "template", "state")
	poolMinDesc     = desc("pool_min_ready", "The members a template's warm pool keeps ready.", "template")
	poolMaxDesc     = desc("pool_max_ready", "The most members a template's warm pool holds.", "template")
	buildsDesc      = desc("template_builds", "Template builds by state (ready and failed: every one ever).", "state")
	cpusDesc        = desc("host_cpus", "This host's cores.")
	memoryDesc      = desc("host_memory_bytes", "This host's memory.")
	heldCPUDesc     = desc("host_sandbox_vcpus", "vCPUs asked for by the sandboxes starting or running on the default provider.")
	heldMemoryDesc  = desc("host_sandbox_memory_bytes", "Memory asked for by the sandboxes starting or running on the default provider.")
	heldCountDesc   = desc("host_sandboxes", "Sandboxes starting or running on the default provider.")
	diskDesc        = desc("host_disk_bytes", "The default provider's sandbox filesystem, by measure: total, free, committed (what its sandboxes may still write), reserve (kept free for the host).", "measure")
	addressesDesc   = desc("host_addresses", "Sandbox addresses of the default provider's network, by state (used, free).", "state")
	descs           = []*prometheus.Desc{sandboxesDesc, poolMembersDesc, poolMinDesc, poolMaxDesc, buildsDesc, cpusDesc, memoryDesc,
		heldCPUDesc, heldMemoryDesc, heldCountDesc, diskDesc, addressesDesc}
)

// Describe is prometheus.Collector's.
func (c *Census) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// Collect is prometheus.Collector's: it reads the ledger and the host now.
// A read that fails is logged and its metrics are left out.
func (c *Census) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	if c.Ledger != nil {
		if counts, err := c.Ledger.Counts(ctx); err != nil {
			c.failed("counting sandboxes, pools and builds", err)
		} else {
			collectCounts(counts, gauge)
		}
	}
	if c.CPUs > 0 {
		gauge(cpusDesc, float64(c.CPUs))
	}
	if c.MemoryBytes > 0 {
		gauge(memoryDesc, float64(c.MemoryBytes))
	}
	if c.Host != nil {
		c.collectHost(ctx, gauge)
	}
	if c.Addresses != nil {
		if used, total, ok := c.Addresses(); ok {
			gauge(addressesDesc, float64(used), "used")
			gauge(addressesDesc, float64(total-used), "free")
		}
	}
}

func collectCounts(counts Counts, gauge func(*prometheus.Desc, float64, ...string)) {
	for _, s := range counts.Sandboxes {
		gauge(sandboxesDesc, float64(s.N), s.Provider, string(s.State))
	}
	for _, p := range counts.Pools {
		gauge(poolMinDesc, float64(p.MinReady), p.Template)
		gauge(poolMaxDesc, float64(p.MaxReady), p.Template)
		for state, n := range p.Members {
			gauge(poolMembersDesc, float64(n), p.Template, string(state))
		}
	}
	for state, n := range counts.Builds {
		gauge(buildsDesc, float64(n), string(state))
	}
}

func (c *Census) collectHost(ctx context.Context, gauge func(*prometheus.Desc, float64, ...string)) {
	if use, err := c.Host.HostUse(ctx); err != nil {
		c.failed("summing what the host's sandboxes hold", err)
	} else {
		gauge(heldCPUDesc, float64(use.MilliCPU)/1000)
		gauge(heldMemoryDesc, float64(use.MemoryMB<<20))
		gauge(heldCountDesc, float64(use.Sandboxes))
	}
	d, ok, err := c.Host.Disk(ctx)
	switch {
	case err != nil:
		c.failed("measuring the host's disk", err)
	case ok:
		gauge(diskDesc, float64(d.Total), "total")
		gauge(diskDesc, float64(d.Free), "free")
		gauge(diskDesc, float64(d.Committed), "committed")
		gauge(diskDesc, float64(d.Reserve), "reserve")
	}
}

func (c *Census) failed(what string, err error) {
	if c.Log != nil {
		c.Log.Warn("metrics: "+what+" failed; those metrics are left out of this scrape", "err", err)
	}
}
