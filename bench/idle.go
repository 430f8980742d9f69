package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
)

// IdleResult is the host memory that Count idle sandboxes, held at once,
// cost. The sandboxes' memory cgroups hold most of it; runsc processes of
// the sandboxes found outside their cgroup are added at their PSS (their
// share of pages shared with other processes, such as runsc's own code).
// MemAvailable's drop since before the first of them, and its rise when they
// are removed, are the cross-check: they also see what no cgroup is charged
// for (network namespaces, veths, nftables rules), but also whatever else
// the host does meanwhile.
type IdleResult struct {
	Count              int     `json:"count"`
	Create             Stat    `json:"create"` // of the sandboxes created to reach Count from the count before, two at a time
	CgroupTotalMB      float64 `json:"cgroup_total_mb"`
	Processes          int     `json:"runsc_processes"`
	OutsideProcesses   int     `json:"runsc_processes_outside_cgroup"`
	OutsideTotalMB     float64 `json:"outside_pss_total_mb"`
	RunscRSSTotalMB    float64 `json:"runsc_rss_total_mb"` // every runsc process of the sandboxes, for reference
	RunscPSSTotalMB    float64 `json:"runsc_pss_total_mb"`
	PerSandboxMB       float64 `json:"per_sandbox_mb"`        // (cgroups + outside) ÷ count
	MemAvailableDropMB float64 `json:"mem_available_drop_mb"` // ÷ count
	// For the largest count only: the rise of MemAvailable once all were
	// removed, ÷ count.
	MemAvailableRiseMB float64 `json:"mem_available_rise_on_removal_mb,omitempty"`
}

// settle is how long the idle sandboxes are left alone before measuring.
const settle = 5 * time.Second

// idle creates idle sandboxes, two at a time, until each count in Idle is
// held at once, and measures each.
func (l *lab) idle(ctx context.Context, r *Report) error {
	counts := slices.Clone(l.cfg.Idle)
	slices.Sort(counts)
	if len(counts) == 0 {
		return nil
	}
	p, err := l.provider(nil)
	if err != nil {
		return err
	}
	var ids []string
	remove := func() error {
		if len(ids) == 0 {
			return nil
		}
		l.cfg.progress("idle: removing %d sandboxes", len(ids))
		err := parallel(len(ids), 4, func(i int) error { return p.Kill(context.WithoutCancel(ctx), sbx.IDHandle(ids[i])) })
		ids = nil
		return err
	}
	defer remove()
	before, err := l.steadyMemAvailable(ctx)
	if err != nil {
		return err
	}
	for _, count := range counts {
		from := len(ids)
		for range count - from {
			ids = append(ids, l.id("i"))
		}
		took := make([]time.Duration, len(ids)-from)
		err := parallel(len(took), 2, func(i int) error {
			_, d, err := l.createLocal(ctx, p, ids[from+i], memoryMB)
			took[i] = d
			if err == nil && (from+i+1)%25 == 0 {
				l.cfg.progress("idle: %d sandboxes", from+i+1)
			}
			return err
		})
		if err != nil {
			return err
		}
		l.cfg.progress("idle: %d sandboxes held; measuring after %s", count, settle)
		if err := sleep(ctx, settle); err != nil {
			return err
		}
		res, err := l.measureIdle(ids, before)
		if err != nil {
			return err
		}
		res.Create = NewStat(took)
		l.cfg.progress("idle %d: %.1f MB per sandbox (cgroups %.0f MB, %d of %d runsc processes outside them, %.0f MB), MemAvailable drop %.1f MB per sandbox; create p50 %.0f ms p95 %.0f ms, two at a time",
			count, res.PerSandboxMB, res.CgroupTotalMB, res.OutsideProcesses, res.Processes, res.OutsideTotalMB, res.MemAvailableDropMB, res.Create.P50, res.Create.P95)
		r.Idle = append(r.Idle, res)
	}
	// The cross-check once more: what removing them all gives back.
	held := readMeminfo()["MemAvailable"]
	n := len(ids)
	if err := remove(); err != nil {
		return err
	}
	after, err := l.steadyMemAvailable(ctx)
	if err != nil {
		return err
	}
	last := &r.Idle[len(r.Idle)-1]
	last.MemAvailableRiseMB = mib(after-held) / float64(n)
	l.cfg.progress("idle: removing %d gave back %.1f MB of MemAvailable per sandbox", n, last.MemAvailableRiseMB)
	return nil
}

func (l *lab) measureIdle(ids []string, memAvailableBefore int64) (IdleResult, error) {
	res := IdleResult{Count: len(ids)}
	var cgroups int64
	for _, id := range ids {
		n, err := cgroupMemory(l.cfg.Name, id)
		if err != nil {
			return res, err
		}
		cgroups += n
	}
	var outside, rss, pss int64
	for _, pr := range runscProcesses(l.dir) {
		res.Processes++
		rss += pr.rss
		pss += pr.pss
		if !strings.HasPrefix(pr.cgroup, "/"+l.cfg.Name+"/") {
			res.OutsideProcesses++
			outside += pr.pss
		}
	}
	drop := memAvailableBefore - readMeminfo()["MemAvailable"]
	n := float64(len(ids))
	res.CgroupTotalMB, res.OutsideTotalMB = mib(cgroups), mib(outside)
	res.RunscRSSTotalMB, res.RunscPSSTotalMB = mib(rss), mib(pss)
	res.PerSandboxMB = mib(cgroups+outside) / n
	res.MemAvailableDropMB = mib(drop) / n
	return res, nil
}

// steadyMemAvailable waits, up to a minute, until the host's MemAvailable
// stops moving (the earlier phases' sandboxes give their memory back
// gradually) and returns it.
func (l *lab) steadyMemAvailable(ctx context.Context) (int64, error) {
	start := time.Now()
	last, steady := readMeminfo()["MemAvailable"], 0
	for steady < 5 && time.Since(start) < time.Minute {
		if err := sleep(ctx, time.Second); err != nil {
			return 0, err
		}
		now := readMeminfo()["MemAvailable"]
		if abs(now-last) < 1<<20 {
			steady++
		} else {
			steady = 0
		}
		last = now
	}
	l.cfg.progress("idle: MemAvailable %.0f MB, steady to 1 MB/s after %s", mib(last), time.Since(start).Round(time.Second))
	return last, nil
}

func abs(n int64) int64 { return max(n, -n) }

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// cgroupMemory is the memory usage of the cgroup /<parent>/<id>.
func cgroupMemory(parent, id string) (int64, error) {
	path := filepath.Join(cgroupRoot, "memory", parent, id, "memory.usage_in_bytes")
	if unified() {
		path = filepath.Join(cgroupRoot, parent, id, "memory.current")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
}

const cgroupRoot = "/sys/fs/cgroup"

func unified() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
}

// process is a host process and its memory.
type process struct {
	pid      int
	cgroup   string // its memory cgroup
	rss, pss int64
}

// runscProcesses are the processes whose command line names dir: the runsc
// sandbox and gofer processes of this run (their --root lies in dir).
func runscProcesses(dir string) []process {
	var out []process
	for _, pid := range pidsNaming(dir + "/") {
		pr := process{pid: pid, cgroup: memoryCgroupOf(pid)}
		f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			switch fields[0] {
			case "Rss:":
				pr.rss = kb << 10
			case "Pss:":
				pr.pss = kb << 10
			}
		}
		f.Close()
		out = append(out, pr)
	}
	return out
}

// pidsNaming lists the processes, other than this one, whose command line
// contains s.
func pidsNaming(s string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// memoryCgroupOf is the memory cgroup of a process, as /proc/<pid>/cgroup says.
func memoryCgroupOf(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	v2 := ""
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), "memory") {
			return parts[2]
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
	}
	return v2
}

// readMeminfo returns /proc/meminfo in bytes, by name.
func readMeminfo() map[string]int64 {
	data, _ := os.ReadFile("/proc/meminfo")
	out := map[string]int64{}
	for _, line := range strings.Split(string(data), "\n") {
		var name string
		var kb int64
		if _, err := fmt.Sscanf(line, "%s %d", &name, &kb); err == nil {
			out[strings.TrimSuffix(name, ":")] = kb << 10
		}
	}
	return out
}

// dirMB is the size of the files under dir.
func dirMB(dir string) (float64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return mib(n), err
}
