package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// waitPool polls the template's warm pool until ready members are ready.
func (s *server) waitPool(template string, ready int) apiv1.WarmPool {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var l apiv1.WarmPoolList
		s.call("GET", "/api/v1/admin/template-warm-pools", nil, http.StatusOK, &l)
		for _, p := range l.Items {
			if p.Template == template && p.Ready == ready {
				return p
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the warm pool of %s never held %d ready: %+v", template, ready, l.Items)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Warm pools end to end, on real gVisor sandboxes: the operator sets one
// (CLI), the refill fills it, a create checks a member out (its env, token
// and metadata the caller's; commands run in it through serve), the pool
// refills; a create of another size goes cold and says why; require fails
// with warm_pool_unavailable when none is ready; bypass goes cold; the pool
// is deleted with its members.
func TestWarmPoolsLocal(t *testing.T) {
	s := localServer(t, false)
	s.ok("pool", "set", "base", "--min", "2", "--max", "2", "--memory-mb", "256", "--disk-mb", "512")
	s.waitPool("base", 2)
	if out := s.ok("pool", "list"); !strings.Contains(out, "base") {
		t.Errorf("sbx pool list: %q", out)
	}

	warm := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "diskMB": 512, "envVars": map[string]string{"FOO": "mine"},
		"metadata": map[string]string{"who": "me"}, "timeout": 300})
	if !hasStep(warm.Timeline, "checked_out") || warm.Metadata["who"] != "me" || warm.Metadata["sbx.pool"] != "" || warm.Timeout != 300 {
		t.Fatalf("a checkout: %+v", warm)
	}
	if got := s.sh(warm, "echo $FOO"); got != "mine" {
		t.Errorf("the checked-out sandbox's env: %q", got)
	}
	s.waitPool("base", 2)

	cold := s.create(map[string]any{"waitReady": true, "memoryMB": 512, "diskMB": 512})
	if hasStep(cold.Timeline, "checked_out") || !strings.Contains(cold.Timeline[0].Detail, "cold, not from the warm pool") {
		t.Errorf("another size: %+v", cold.Timeline)
	}
	bypass := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "diskMB": 512, "warmPool": "bypass"})
	if hasStep(bypass.Timeline, "checked_out") {
		t.Error("bypass checked out")
	}
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "memoryMB": 512, "diskMB": 512, "warmPool": "require"},
		http.StatusServiceUnavailable, "warm_pool_unavailable")
	for range 2 {
		sb := s.create(map[string]any{"waitReady": true, "memoryMB": 256, "diskMB": 512, "warmPool": "require"})
		if !hasStep(sb.Timeline, "checked_out") {
			t.Errorf("require: %+v", sb.Timeline)
		}
	}
	var set apiv1.WarmPool
	s.call("PUT", "/api/v1/admin/template-warm-pools/base", map[string]any{"min_ready": 0, "max_ready": 1, "memoryMB": 256, "diskMB": 512}, http.StatusOK, &set)
	if set.MinReady != 0 || set.MemoryMB != 256 {
		t.Errorf("the pool set again: %+v", set)
	}
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "memoryMB": 256, "diskMB": 512, "warmPool": "require"},
		http.StatusServiceUnavailable, "has no sandbox ready")
	s.call("DELETE", "/api/v1/admin/template-warm-pools/base", nil, http.StatusNoContent, nil)
	s.fail("DELETE", "/api/v1/admin/template-warm-pools/base", nil, http.StatusNotFound, "has no warm pool")
	for _, sb := range s.listAll("") {
		if sb.Metadata["sbx.pool"] != "" && !(sb.State == "killed" || sb.State == "failed") {
			t.Errorf("a pool member outlived its pool: %s %s", sb.SandboxID, sb.State)
		}
	}
}
