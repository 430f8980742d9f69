package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// slowWeb is a template whose start command takes two seconds before it
// serves HTTP on 8080.
const slowWeb = "e2e-slow-web"

// A ready template end to end, on real gVisor sandboxes: the operator
// prepares it (CLI, waiting for port 8080 behind a start command that
// takes 2 s); a create of the template then restores it, its timeline says
// so, and its server answers at once (a cold create's does not for 2 s); a
// create of another size boots; a warm pool of it fills from the snapshot;
// the ready snapshot is deleted and creates boot again.
func TestReadyTemplateLocal(t *testing.T) {
	if _, err := testtemplates.Derived(slowWeb, "sleep 2; exec /.sbx/sbx agent echo 8080"); err != nil {
		t.Fatal(err)
	}
	s := localServer(t, false)
	out := s.ok("template", "ready", slowWeb, "--port", "8080", "--memory-mb", "256")
	if !strings.Contains(out, slowWeb+" ready, snapshot ") {
		t.Fatalf("sbx template ready: %q", out)
	}
	var st apiv1.ReadyTemplate
	s.call("GET", "/api/v1/admin/templates/"+slowWeb+"/ready", nil, http.StatusOK, &st)
	if st.State != "ready" || st.Snapshot == nil || st.Snapshot.MemoryMB != 256 {
		t.Fatalf("ready state: %+v", st)
	}

	warm := s.create(map[string]any{"templateID": slowWeb, "waitReady": true, "memoryMB": 256, "envVars": map[string]string{"WHO": "me"}})
	if !strings.Contains(warm.Timeline[0].Detail, "restored from its ready snapshot") || warm.SnapshotID != st.Snapshot.ID {
		t.Fatalf("a create of a ready template: %+v", warm.Timeline)
	}
	if got := s.sh(warm, "curl -sf -o /dev/null -w '%{http_code}' localhost:8080/echo; echo \" $WHO\""); got != "200 me" {
		t.Errorf("the restored server, at once: %q", got)
	}
	cold := s.create(map[string]any{"templateID": slowWeb, "waitReady": true, "memoryMB": 512})
	if strings.Contains(cold.Timeline[0].Detail, "ready snapshot") {
		t.Errorf("a create of another size restored: %+v", cold.Timeline[0])
	}
	if got := s.shStatus(cold, "curl -s -o /dev/null -w '%{http_code}' localhost:8080/echo"); got == "200" {
		t.Error("a cold create's server answered before its start command's two seconds: the test proves nothing")
	}

	s.ok("pool", "set", slowWeb, "--min", "1", "--max", "1", "--memory-mb", "256")
	s.waitPool(slowWeb, 1)
	pooled := s.create(map[string]any{"templateID": slowWeb, "waitReady": true, "memoryMB": 256, "warmPool": "require"})
	if got := s.sh(pooled, "curl -sf -o /dev/null -w '%{http_code}' localhost:8080/echo"); got != "200" {
		t.Errorf("a pool member made from the ready snapshot: %q", got)
	}
	s.ok("pool", "rm", slowWeb)

	s.call("DELETE", "/api/v1/admin/templates/"+slowWeb+"/ready", nil, http.StatusNoContent, nil)
	if _, errOut, code := s.cli("template", "ready", slowWeb, "--rm"); code == 0 || !strings.Contains(errOut, "has no ready snapshot") {
		t.Errorf("sbx template ready --rm of none: exit %d %s", code, errOut)
	}
	s.call("GET", "/api/v1/admin/templates/"+slowWeb+"/ready", nil, http.StatusOK, &st)
	if st.State != "none" {
		t.Errorf("after --rm: %+v", st)
	}
	again := s.create(map[string]any{"templateID": slowWeb, "waitReady": true, "memoryMB": 256})
	if strings.Contains(again.Timeline[0].Detail, "ready snapshot") {
		t.Errorf("a create after the ready snapshot went: %+v", again.Timeline[0])
	}
	s.fail("PUT", "/api/v1/admin/templates/"+slowWeb+"/ready", map[string]any{"port": 8080, "command": "true"}, http.StatusBadRequest, "one of them")
}
