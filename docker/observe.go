package docker

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
)

// Logs implements sbx.LogReader: the container's output as the daemon
// keeps it (docker logs), stdout and stderr apart, each line dated by the
// daemon.
func (p *Provider) Logs(ctx context.Context, h sbx.Handle) ([]sbx.LogLine, error) {
	id, err := handleID(h)
	if err != nil {
		return nil, err
	}
	return p.logs(ctx, id, "all", time.Time{})
}

// LogsFrom implements sbx.LogFollower: the lines the daemon stamped at or
// after the cursor's time (its since), less the cursor's Offset lines of
// that very time, which an earlier read answered. The cursor is the last
// line's time and how many lines carry it.
func (p *Provider) LogsFrom(ctx context.Context, h sbx.Handle, from sbx.LogCursor) ([]sbx.LogLine, sbx.LogCursor, error) {
	id, err := handleID(h)
	if err != nil {
		return nil, from, err
	}
	lines, err := p.logs(ctx, id, "all", from.At)
	if err != nil {
		return nil, from, err
	}
	fresh, seen, next := lines[:0], from.Offset, from
	for _, l := range lines {
		switch {
		case l.At.Before(from.At):
			continue
		case l.At.Equal(from.At) && seen > 0:
			seen--
			continue
		case l.At.Equal(next.At):
			next.Offset++
		default:
			next.At, next.Offset = l.At, 1
		}
		fresh = append(fresh, l)
	}
	return fresh, next, nil
}

// logs reads the last tail lines of a container's output ("all": every
// one), stamped at or after since when it is not zero.
func (p *Provider) logs(ctx context.Context, id, tail string, since time.Time) ([]sbx.LogLine, error) {
	if _, err := p.inspect(ctx, id); err != nil {
		return nil, err
	}
	q := url.Values{"stdout": {"1"}, "stderr": {"1"}, "timestamps": {"1"}, "tail": {tail}}
	if !since.IsZero() {
		q.Set("since", fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond()))
	}
	resp, err := p.api.Request(ctx, "GET", "/containers/"+url.PathEscape(p.container(id))+"/logs", q, nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var lines []sbx.LogLine
	err = demux(resp.Body, func(stream, text string) {
		l := sbx.LogLine{Source: stream, Line: text}
		if stamp, rest, ok := strings.Cut(text, " "); ok {
			if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
				l.At, l.Line = at.UTC(), rest
			}
		}
		lines = append(lines, l)
	})
	return lines, err
}

// lastLines is the last lines of a container's output, for a diagnostic:
// "" when there are none.
func (p *Provider) lastLines(ctx context.Context, id string) string {
	lines, _ := p.logs(ctx, id, "5", time.Time{})
	if len(lines) == 0 {
		return ""
	}
	var s []string
	for _, l := range lines {
		s = append(s, l.Line)
	}
	return "; its last log lines: " + strings.Join(s, " | ")
}

// stats is what the provider reads of GET /containers/{id}/stats.
type stats struct {
	Read      time.Time `json:"read"`
	PidsStats struct {
		Current int64 `json:"current"`
	} `json:"pids_stats"`
	Networks map[string]struct {
		RxBytes int64 `json:"rx_bytes"`
		TxBytes int64 `json:"tx_bytes"`
	} `json:"networks"`
	MemoryStats struct {
		Usage int64            `json:"usage"`
		Stats map[string]int64 `json:"stats"`
	} `json:"memory_stats"`
	CPUStats struct {
		CPUUsage struct {
			TotalUsage int64 `json:"total_usage"`
		} `json:"cpu_usage"`
	} `json:"cpu_stats"`
}

// Metrics implements sbx.MetricsReader: the daemon's one-shot stats (CPU
// time, memory less the page cache as `docker stats` counts it, processes,
// network), and the container's writable layer's size.
func (p *Provider) Metrics(ctx context.Context, h sbx.Handle) (sbx.Metrics, error) {
	id, err := handleID(h)
	if err != nil {
		return sbx.Metrics{}, err
	}
	if _, err := p.inspect(ctx, id); err != nil {
		return sbx.Metrics{}, err
	}
	var st stats
	name := url.PathEscape(p.container(id))
	if err := p.api.Call(ctx, "GET", "/containers/"+name+"/stats", url.Values{"stream": {"false"}, "one-shot": {"true"}}, nil, &st); err != nil {
		return sbx.Metrics{}, err
	}
	m := sbx.Metrics{At: st.Read.UTC(), CPUSeconds: float64(st.CPUStats.CPUUsage.TotalUsage) / 1e9, Processes: st.PidsStats.Current}
	if m.At.IsZero() || m.At.Year() < 2000 {
		m.At = time.Now().UTC()
	}
	m.MemoryBytes = st.MemoryStats.Usage
	for _, k := range []string{"total_inactive_file", "inactive_file"} { // cgroup v1, v2
		if v, ok := st.MemoryStats.Stats[k]; ok && v < m.MemoryBytes {
			m.MemoryBytes -= v
			break
		}
	}
	for _, n := range st.Networks {
		m.NetRxBytes += n.RxBytes
		m.NetTxBytes += n.TxBytes
	}
	var sized struct{ SizeRw int64 }
	if err := p.api.Call(ctx, "GET", "/containers/"+name+"/json", url.Values{"size": {"1"}}, nil, &sized); err == nil {
		m.DiskUsedBytes = sized.SizeRw
	}
	return m, nil
}

// Watch implements sbx.Watcher: every WatchEvery it looks for this
// instance's containers that exited, and reports each once: out of memory
// when the kernel's OOM killer ended it, else its exit code and last lines.
func (p *Provider) Watch(ctx context.Context, died func(sbx.Died)) {
	reported := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.cfg.WatchEvery):
		}
		cs, err := p.containers(ctx, "exited", "dead")
		if err != nil {
			continue // the daemon is down: its Check says so
		}
		seen := map[string]bool{}
		for _, c := range cs {
			id := c.Labels[LabelID]
			if !idPattern.MatchString(id) {
				continue
			}
			seen[id] = true
			if reported[id] || !p.ops.TryLock(id) { // an operation in progress settles it
				continue
			}
			d, dead := p.check(ctx, id)
			p.ops.Unlock(id)
			if dead {
				reported[id] = true
				died(d)
			}
		}
		for id := range reported {
			if !seen[id] {
				delete(reported, id)
			}
		}
	}
}

// check reports whether a sandbox's container ended, and why.
func (p *Provider) check(ctx context.Context, id string) (sbx.Died, bool) {
	c, err := p.inspect(ctx, id)
	if err != nil || c.State.Running {
		return sbx.Died{}, false
	}
	d := sbx.Died{ProviderSandboxID: id}
	switch {
	case c.State.OOMKilled:
		d.Diagnostic = "out of memory: the sandbox used more than its memory limit and the kernel killed it"
	case c.State.Error != "":
		d.Diagnostic = "the sandbox stopped running: " + c.State.Error + p.lastLines(ctx, id)
	default:
		d.Diagnostic = fmt.Sprintf("the sandbox stopped running (its first process exited with code %d)%s", c.State.ExitCode, p.lastLines(ctx, id))
	}
	return d, true
}
