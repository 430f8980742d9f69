package lifecycle

import (
	"context"
	"encoding/base64"
	"sort"
	"strconv"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

// Logs returns a page of a sandbox's log, oldest first: sbx's lifecycle lines
// (its timeline) merged with the provider's own log when it keeps one.
func (m *Manager) Logs(ctx context.Context, sb sbx.Sandbox, cursor string, limit int) ([]sbx.LogLine, string, error) {
	start := 0
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		n, err2 := strconv.Atoi(string(raw))
		if err != nil || err2 != nil || n < 0 {
			return nil, "", sbx.Errorf(sbx.EInvalid, "cursor %q is not one this server returned", cursor)
		}
		start = n
	}
	timeline, own, err := m.logSources(ctx, sb)
	if err != nil {
		return nil, "", err
	}
	lines := append(timeline, own...)
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].At.Before(lines[j].At) })
	if start > len(lines) {
		start = len(lines)
	}
	end := min(start+limit, len(lines))
	next := ""
	if end < len(lines) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return lines[start:end], next, nil
}

// logSources reads the two parts of a sandbox's log, each oldest first and
// only ever appended to: its timeline as lines of source "sbx", and the
// provider's own log when it keeps one (none before the provider made the
// sandbox; a provider that cannot read it is logged, not an error).
func (m *Manager) logSources(ctx context.Context, sb sbx.Sandbox) (timeline, own []sbx.LogLine, err error) {
	if timeline, err = m.timelineLines(ctx, sb); err != nil {
		return nil, nil, err
	}
	if p, ok := m.providers[sb.Provider].(sbx.LogReader); ok && !sb.Handle.IsZero() {
		own, err = p.Logs(ctx, sb.Handle)
		if err != nil {
			m.log.Warn("reading provider logs", "sandbox", sb.ID, "err", err)
		}
	}
	return timeline, own, nil
}

// timelineLines is sb's timeline as log lines (source "sbx").
func (m *Manager) timelineLines(ctx context.Context, sb sbx.Sandbox) ([]sbx.LogLine, error) {
	events, err := m.store.Events(ctx, sb.ID)
	if err != nil {
		return nil, err
	}
	timeline := make([]sbx.LogLine, 0, len(events))
	for _, e := range events {
		text := e.Step
		if e.Detail != "" {
			text += ": " + e.Detail
		}
		timeline = append(timeline, sbx.LogLine{At: e.At, Source: "sbx", Line: text})
	}
	return timeline, nil
}

// FollowEvery is how often FollowLogs looks for new lines and for the
// sandbox's end.
var FollowEvery = 250 * time.Millisecond

// FollowLogs passes emit the whole log of sb (as Logs orders it), then
// every line added to it as it comes, until the sandbox ends (killed or
// failed: the lines it ended with are passed first), ctx ends or emit
// fails. It watches the ledger, not this serve's memory, so a sandbox that
// another serve on the same database kills ends the stream too.
func (m *Manager) FollowLogs(ctx context.Context, sb sbx.Sandbox, emit func([]sbx.LogLine) error) error {
	var seenTimeline, seenOwn int // lines passed on from each part
	var cursor sbx.LogCursor      // where the provider's log was read to, when it can go on from there
	follower, follows := m.providers[sb.Provider].(sbx.LogFollower)
	tick := time.NewTicker(FollowEvery)
	defer tick.Stop()
	for {
		// The state is read before the lines, so that once it is final
		// the lines read after it hold the sandbox's last ones.
		cur, err := m.store.GetSandbox(ctx, "", sb.ID)
		if err != nil {
			return err
		}
		var timeline, own []sbx.LogLine
		if follows {
			// Only what the provider's log grew by: a follower costs
			// that, not the log's size, each time it looks.
			if timeline, err = m.timelineLines(ctx, cur); err != nil {
				return err
			}
			if !cur.Handle.IsZero() {
				var fresh []sbx.LogLine
				if fresh, cursor, err = follower.LogsFrom(ctx, cur.Handle, cursor); err != nil {
					m.log.Warn("reading provider logs", "sandbox", sb.ID, "err", err)
				}
				own, seenOwn = fresh, 0
			}
		} else if timeline, own, err = m.logSources(ctx, cur); err != nil {
			return err
		}
		// Both parts only grow; a provider's log that shrank (its files
		// went with a kill) has nothing new.
		var fresh []sbx.LogLine
		if len(timeline) > seenTimeline {
			fresh = append(fresh, timeline[seenTimeline:]...)
			seenTimeline = len(timeline)
		}
		if len(own) > seenOwn {
			fresh = append(fresh, own[seenOwn:]...)
			if !follows {
				seenOwn = len(own)
			}
		}
		sort.SliceStable(fresh, func(i, j int) bool { return fresh[i].At.Before(fresh[j].At) })
		if len(fresh) > 0 {
			if err := emit(fresh); err != nil {
				return err
			}
		}
		if cur.State.Final() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Metrics measures a running sandbox through its provider.
func (m *Manager) Metrics(ctx context.Context, sb sbx.Sandbox) (sbx.Metrics, error) {
	if sb.State != sbx.StateRunning {
		return sbx.Metrics{}, sbx.Errorf(sbx.EConflict, "sandbox %s is %s: metrics are measured only while it runs", sb.ProviderSandboxID, sb.State)
	}
	p, err := m.provider(sb.Provider)
	if err != nil {
		return sbx.Metrics{}, err
	}
	r, ok := p.(sbx.MetricsReader)
	if !ok {
		return sbx.Metrics{}, sbx.Errorf(sbx.EUnsupported, "provider %s does not report metrics", p.Name())
	}
	metrics, err := r.Metrics(ctx, sb.Handle)
	if err != nil {
		return metrics, sbx.Errorf(sbx.EProvider, "provider %s could not measure sandbox %s: %s", p.Name(), sb.ProviderSandboxID, providerMessage(err))
	}
	return metrics, nil
}

// Usage sums the caller's sandboxes per project: those within its reach.
func (m *Manager) Usage(ctx context.Context, c sbx.Caller) (map[string]*ledger.Usage, error) {
	return m.store.UsageByProject(ctx, c.Org.ID, c.Reach(), m.clock.Now())
}

// Disk reports the disk of the default provider's host, when the provider
// keeps its sandboxes on one (sbx.DiskReporter); ok is false otherwise.
func (m *Manager) Disk(ctx context.Context) (d sbx.Disk, ok bool, err error) {
	p, found := m.providers[m.cfg.DefaultProvider]
	r, reports := p.(sbx.DiskReporter)
	if !found || !reports {
		return sbx.Disk{}, false, nil
	}
	d, err = r.Disk(ctx)
	if err != nil {
		return d, false, sbx.Errorf(sbx.EProvider, "provider %s could not measure its disk: %s", p.Name(), providerMessage(err))
	}
	return d, true, nil
}

// HostUse sums what the sandboxes of every org on the default provider hold:
// the load of this host, for comparison with its capacity.
func (m *Manager) HostUse(ctx context.Context) (ledger.PlanUse, error) {
	return m.store.ProviderUse(ctx, m.cfg.DefaultProvider)
}
