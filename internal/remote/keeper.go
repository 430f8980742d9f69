// Package remote is what the providers whose compute is a remote
// service's (e2b, opensandbox) share: a Keeper keeps their sandboxes alive
// while serve runs and notices those that end there (each lives for a
// lease, its timeout or expiration there, which Watch renews: a serve that
// is gone for longer than the lease leaves no compute behind), and a
// Service admits creates (admit.go).
package remote

import (
	"context"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
)

// Remote is what a Keeper asks of the service.
type Remote interface {
	// Live lists the provider's sandboxes the service holds, by ID, each
	// with whether it runs (only running ones are renewed).
	Live(ctx context.Context) (map[string]bool, error)
	// Renew extends a running sandbox's lease.
	Renew(ctx context.Context, id string) error
}

// Keeper renews a provider's leases and tells the sandboxes that ended
// from those the provider killed.
type Keeper struct {
	mu    sync.Mutex
	kills map[string]time.Time // what the provider killed, until a round has seen it gone
}

// Killed records that the provider killed sandbox id itself.
func (k *Keeper) Killed(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kills == nil {
		k.kills = map[string]time.Time{}
	}
	now := time.Now()
	k.kills[id] = now
	for other, at := range k.kills { // what no Watch runs to see
		if now.Sub(at) > time.Hour {
			delete(k.kills, other)
		}
	}
}

// killed says whether the provider killed id, and forgets it.
func (k *Keeper) killed(id string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.kills[id]
	delete(k.kills, id)
	return ok
}

// Watch renews, every round until ctx ends, the lease of each running
// sandbox r lists, and reports those listed in the round before and gone
// now that the provider did not kill, with diagnostic. A round whose list
// fails changes nothing.
func (k *Keeper) Watch(ctx context.Context, r Remote, every time.Duration, diagnostic string, died func(sbx.Died)) {
	seen := map[string]bool{}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if live, err := r.Live(ctx); err == nil {
			for id, running := range live {
				if running {
					r.Renew(ctx, id)
				}
			}
			for id := range seen {
				if _, ok := live[id]; !ok && !k.killed(id) {
					died(sbx.Died{ProviderSandboxID: id, Diagnostic: diagnostic})
				}
			}
			seen = live
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
