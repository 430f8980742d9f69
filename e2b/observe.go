package e2b

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/remote"
)

// Watch implements sbx.Watcher: every WatchEvery, it renews the lease of
// each running sandbox of this instance and reports those that were listed
// before and are gone now (their lease ran out while serve was away, or
// the E2B server killed them); a sandbox the provider killed is not
// reported.
func (p *Provider) Watch(ctx context.Context, died func(sbx.Died)) {
	p.leases.Watch(ctx, leased{p}, p.cfg.WatchEvery, "the sandbox is gone from the E2B server: it was killed there, or its lease ran out", died)
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
			live[sb.SandboxID] = sb.State == "running"
		}
	}
	return live, nil
}

func (l leased) Renew(ctx context.Context, id string) error { return l.p.renew(ctx, id) }

// Logs implements sbx.LogReader: the sandbox's log as the API keeps it.
func (p *Provider) Logs(ctx context.Context, h sbx.Handle) ([]sbx.LogLine, error) {
	id, err := handleID(h)
	if err != nil {
		return nil, err
	}
	var out logs
	if _, err := p.call(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id)+"/logs", url.Values{"limit": {"1000"}}, nil, &out); err != nil {
		return nil, remote.Fault(id, err)
	}
	lines := make([]sbx.LogLine, 0, len(out.Logs))
	for _, l := range out.Logs {
		lines = append(lines, sbx.LogLine{At: l.Timestamp, Source: Name, Line: l.Line})
	}
	return lines, nil
}

// Metrics implements sbx.MetricsReader: the API's latest point. E2B
// reports CPU as a share, not seconds, so CPUSeconds stays zero.
func (p *Provider) Metrics(ctx context.Context, h sbx.Handle) (sbx.Metrics, error) {
	id, err := handleID(h)
	if err != nil {
		return sbx.Metrics{}, err
	}
	var points []metric
	if _, err := p.call(ctx, http.MethodGet, "/sandboxes/"+url.PathEscape(id)+"/metrics", nil, nil, &points); err != nil {
		return sbx.Metrics{}, remote.Fault(id, err)
	}
	m := sbx.Metrics{At: time.Now().UTC()}
	if n := len(points); n > 0 {
		last := points[n-1]
		m.At, m.MemoryBytes, m.DiskUsedBytes = last.Timestamp, last.MemUsed, last.DiskUsed
	}
	return m, nil
}
