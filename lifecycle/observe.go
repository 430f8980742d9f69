package lifecycle

import (
	"context"
	"encoding/base64"
	"sort"
	"strconv"

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
	events, err := m.store.Events(ctx, sb.ID)
	if err != nil {
		return nil, "", err
	}
	lines := make([]sbx.LogLine, 0, len(events))
	for _, e := range events {
		text := e.Step
		if e.Detail != "" {
			text += ": " + e.Detail
		}
		lines = append(lines, sbx.LogLine{At: e.At, Source: "sbx", Line: text})
	}
	if p, ok := m.providers[sb.Provider].(sbx.LogReader); ok && !sb.Handle.IsZero() {
		own, err := p.Logs(ctx, sb.Handle)
		if err != nil {
			m.log.Warn("reading provider logs", "sandbox", sb.ID, "err", err)
		}
		lines = append(lines, own...)
	}
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

// Usage sums the caller's sandboxes per project.
func (m *Manager) Usage(ctx context.Context, c sbx.Caller) (map[string]*ledger.Usage, error) {
	member := ""
	if c.MemberScoped() {
		member = c.User.ID
	}
	us, err := m.store.UsageByProject(ctx, c.Org.ID, member, m.clock.Now())
	if err != nil || c.OrgWide() {
		return us, err
	}
	mine := map[string]*ledger.Usage{}
	if u := us[c.Key.ProjectID]; u != nil {
		mine[c.Key.ProjectID] = u
	}
	return mine, nil
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
