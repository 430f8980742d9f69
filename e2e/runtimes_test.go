package e2e

import (
	"net/http"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// runtimesPath is the default workspace's runtimes of the server's org.
const runtimesPath = "/api/v1/org/default/ws/default/runtimes"

// Every project has a runtime, idle until started; its configuration is
// read and changed over HTTP, every field checked, and other orgs see none.
func TestRuntimeConfigOverHTTP(t *testing.T) {
	s := startServer(t, serverOpts{})
	var list apiv1.RuntimeList
	s.call("GET", runtimesPath, nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].Status != "idle" || list.Items[0].SandboxID != "" || list.Items[0].Config.TemplateID != "base" {
		t.Fatalf("runtimes: %+v", list)
	}
	rt := list.Items[0]
	path := runtimesPath + "/" + rt.ID

	var got apiv1.Runtime
	s.call("PATCH", path, map[string]any{"template_id": "code-interpreter", "cpu": 0.5, "memory_mb": 256, "timeout": 600,
		"ports": []int{8080}, "env": map[string]string{"MODE": "dev"}, "labels": map[string]string{"team": "ml"}}, http.StatusOK, &got)
	c := got.Config
	if c.TemplateID != "code-interpreter" || c.CPU != 0.5 || c.MemoryMB != 256 || c.Timeout != 600 || len(c.Ports) != 1 ||
		c.Env["MODE"] != "dev" || c.Labels["team"] != "ml" {
		t.Fatalf("patched: %+v", got)
	}
	s.call("PATCH", path, map[string]any{"cpu": 1}, http.StatusOK, &got)
	if got.Config.CPU != 1 || got.Config.MemoryMB != 256 {
		t.Fatalf("a second patch keeps what it does not name: %+v", got.Config)
	}
	s.call("GET", path, nil, http.StatusOK, &got)
	if got.Config.CPU != 1 || got.Config.TemplateID != "code-interpreter" || got.Status != "idle" {
		t.Fatalf("get: %+v", got)
	}

	s.fail("PATCH", path, map[string]any{"ports": []int{0}}, http.StatusBadRequest, "port 0 must be between 1 and 65535")
	s.fail("PATCH", path, map[string]any{"ports": []int{49983}}, http.StatusBadRequest, "not the agent's 49983")
	s.fail("PATCH", path, map[string]any{"template_id": "Bad Name"}, http.StatusBadRequest, `template_id "Bad Name" must be`)
	s.fail("PATCH", path, map[string]any{"env": map[string]string{"1X": "v"}}, http.StatusBadRequest, `environment variable name "1X"`)
	s.fail("PATCH", path, map[string]any{"memory_mb": 1}, http.StatusBadRequest, "memory_mb must be between 64")
	s.fail("PATCH", path, map[string]any{"timeout": 0}, http.StatusBadRequest, "timeout must be between 1 and")
	s.fail("PATCH", path, map[string]any{"colour": "red"}, http.StatusBadRequest, `unknown field "colour"`)
	s.fail("GET", runtimesPath+"/no-such-runtime", nil, http.StatusNotFound, "runtime no-such-runtime not found")
	s.fail("GET", "/api/v1/org/default/ws/nope/runtimes", nil, http.StatusNotFound, "nope")
	s.failKey(s.otherOrgKey(t), "GET", path, nil, http.StatusNotFound, "org default not found")
}
