package lifecycle

import (
	"context"
	"sync"

	"github.com/sbxdev/sbx"
)

// RunWatchers listens, until ctx ends, to every provider that reports compute
// ending on its own, and marks those sandboxes failed with the provider's
// diagnostic.
func (m *Manager) RunWatchers(ctx context.Context) {
	var wg sync.WaitGroup
	for _, p := range m.providers {
		if w, ok := p.(sbx.Watcher); ok {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.Watch(ctx, func(d sbx.Died) { m.died(ctx, p, d) })
			}()
		}
	}
	wg.Wait()
}

// died has the provider free what is left of a sandbox whose compute ended
// on its own, then fails it: a sandbox seen failed holds nothing on its
// host (a serve stopped between the two finds it running and dead, and its
// reconcile fails it). A sandbox with an operation in flight is left to
// that operation, which meets the failure itself.
func (m *Manager) died(ctx context.Context, p sbx.Provider, d sbx.Died) {
	sb, err := m.store.GetSandbox(ctx, "", d.ProviderSandboxID)
	if err != nil || sb.Provider != p.Name() {
		return
	}
	unlock, err := m.lock(ctx, sb.ID)
	if err != nil {
		return
	}
	defer unlock()
	if sb, err = m.store.GetSandbox(ctx, "", sb.ID); err != nil {
		return
	}
	if _, err := sbx.Allow(sb, sbx.ActionFail); err != nil {
		return // an operation is in progress, or it is not running nor paused
	}
	m.log.Warn("sandbox died", "sandbox", sb.ID, "provider", p.Name(), "diagnostic", d.Diagnostic)
	if err := p.Kill(ctx, sb.Handle); err != nil {
		m.log.Warn("freeing a dead sandbox; the next reconcile retries", "sandbox", sb.ID, "err", err)
	}
	m.fail(ctx, sb.ID, sbx.EndError, d.Diagnostic)
}
