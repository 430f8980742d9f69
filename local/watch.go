package local

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/local/runsc"
)

// Watch implements sbx.Watcher: every WatchEvery it looks for running or
// paused sandboxes with no process left in their cgroup, and reports each
// once, as out of memory when the kernel's OOM killer ended it, otherwise
// with the last lines of its output.
func (p *Provider) Watch(ctx context.Context, died func(sbx.Died)) {
	reported := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.cfg.WatchEvery):
		}
		ids, _ := p.sandboxIDs()
		seen := map[string]bool{}
		for _, id := range ids {
			seen[id] = true
			if reported[id] {
				continue
			}
			if d, dead := p.check(id); dead {
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

// check reports whether a sandbox that should be running has died, and why.
func (p *Provider) check(id string) (d sbx.Died, dead bool) {
	p.idle(id, func() { // else an operation is in progress: it settles the sandbox
		m, err := p.readMeta(id)
		if err != nil || (m.State != stateRunning && m.State != statePaused) || p.alive(id) {
			return
		}
		d, dead = sbx.Died{ProviderSandboxID: id, Diagnostic: p.diagnose(m)}, true
	})
	return d, dead
}

// diagnose says why a sandbox's processes are gone.
func (p *Provider) diagnose(m meta) string {
	if p.oomKills(m.ProviderID) > 0 {
		return fmt.Sprintf("out of memory: the sandbox used more than its %d MB memory limit and the kernel killed it", m.MemoryMB)
	}
	var own []string
	for _, l := range runsc.Tail(p.outputFile(m.ProviderID), 20) {
		if _, _, ok := parseNote(l); !ok {
			own = append(own, l)
		}
	}
	last := own[max(len(own)-5, 0):]
	if len(last) == 0 {
		return "the sandbox stopped running (runsc exited without a message)"
	}
	return p.scrub("the sandbox stopped running; its last log lines: " + strings.Join(last, " | "))
}
