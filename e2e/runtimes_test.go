package e2e

import (
	"net/http"
	"testing"
	"time"

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

// A runtime's whole life over HTTP: idle → start → pause → resume →
// keepalive → reset → idle → start, each action a 409 that says so when
// the runtime has no sandbox, and a second start a 409 while it has one.
func TestRuntimeLifeOverHTTP(t *testing.T) {
	s := startServer(t, serverOpts{})
	var list apiv1.RuntimeList
	s.call("GET", runtimesPath, nil, http.StatusOK, &list)
	path := runtimesPath + "/" + list.Items[0].ID
	for _, verb := range []string{"pause", "resume", "reset", "keepalive"} {
		s.fail("POST", path+"/"+verb, nil, http.StatusConflict, "it has no sandbox (it is idle); start it first")
	}

	var rt apiv1.Runtime
	s.call("PATCH", path, map[string]any{"labels": map[string]string{"team": "ml"}, "timeout": 300}, http.StatusOK, nil)
	s.call("POST", path+"/start", map[string]any{"requested_runtime_limit_seconds": 120}, http.StatusOK, &rt)
	if rt.Status != "running" || rt.Sandbox == nil || rt.Sandbox.State != "running" || rt.Sandbox.Kind != "runtime" || rt.SandboxID != rt.Sandbox.SandboxID ||
		rt.Sandbox.Metadata["team"] != "ml" || rt.Sandbox.Metadata["sbx.runtime_id"] != rt.ID || rt.Sandbox.EstimatedTotalCredits == "" {
		t.Fatalf("started: %+v %+v", rt, rt.Sandbox)
	}
	first := rt.SandboxID
	if sb := s.get(first); sb.Timeout != 120 {
		t.Fatalf("requested_runtime_limit_seconds: the sandbox's timeout is %d", sb.Timeout)
	}
	s.fail("POST", path+"/start", nil, http.StatusConflict, "reset it before starting another")
	s.fail("POST", path+"/resume", nil, http.StatusConflict, "running")

	s.call("POST", path+"/pause", nil, http.StatusOK, &rt)
	if rt.Status != "paused" || rt.Sandbox.State != "paused" || rt.Sandbox.PauseReason != "user" {
		t.Fatalf("paused: %+v %+v", rt, rt.Sandbox)
	}
	s.fail("POST", path+"/keepalive", nil, http.StatusConflict, "paused")
	s.call("POST", path+"/resume", nil, http.StatusOK, &rt)
	if rt.Status != "running" || rt.SandboxID != first {
		t.Fatalf("resumed: %+v", rt)
	}
	before := *rt.Sandbox.ExpiresAt
	s.call("POST", path+"/keepalive", map[string]any{"extend_seconds": 3000}, http.StatusOK, &rt)
	if !rt.Sandbox.ExpiresAt.After(before.Add(2000 * time.Second)) {
		t.Fatalf("keepalive: expiry %v, was %v", rt.Sandbox.ExpiresAt, before)
	}
	s.fail("POST", path+"/keepalive", map[string]any{"extend_seconds": 0}, http.StatusBadRequest, "extend_seconds must be a positive number")
	s.fail("POST", path+"/start", map[string]any{"secret": "x"}, http.StatusBadRequest, `unknown field "secret"`)

	s.call("POST", path+"/reset", nil, http.StatusOK, &rt)
	if rt.Status != "idle" || rt.SandboxID != "" || rt.Sandbox != nil {
		t.Fatalf("reset: %+v", rt)
	}
	if sb := s.get(first); sb.State != "killed" {
		t.Fatalf("the reset sandbox's row: %+v", sb)
	}
	s.fail("POST", path+"/reset", nil, http.StatusConflict, "it has no sandbox")

	s.call("POST", path+"/start", nil, http.StatusOK, &rt)
	if rt.Status != "running" || rt.SandboxID == first || rt.ID != list.Items[0].ID {
		t.Fatalf("started again: %+v", rt)
	}
	if sb := s.get(rt.SandboxID); sb.Timeout != 300 {
		t.Fatalf("the configured timeout: %d", sb.Timeout)
	}
	// A runtime's sandbox deleted through the sandbox API leaves it idle.
	s.call("DELETE", "/api/v1/sandboxes/"+rt.SandboxID, nil, http.StatusOK, nil)
	s.call("GET", path, nil, http.StatusOK, &rt)
	if rt.Status != "idle" {
		t.Fatalf("after its sandbox was deleted: %+v", rt)
	}
}
