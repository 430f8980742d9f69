package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
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
	s.fail("PATCH", path, map[string]any{"labels": map[string]string{"sbx.runtime_id": "spoof"}}, http.StatusBadRequest, "the prefix sbx. is sbx's own")
	s.fail("GET", runtimesPath+"/no-such-runtime", nil, http.StatusNotFound, "runtime no-such-runtime not found")
	s.fail("GET", "/api/v1/org/default/ws/nope/runtimes", nil, http.StatusNotFound, "nope")
	s.failKey(s.otherOrgKey(t), "GET", path, nil, http.StatusNotFound, "org default not found")

	// A project's key reaches its own project's runtime only.
	var p apiv1.Project
	s.call("POST", "/api/v1/org/default/ws/default/projects", apiv1.CreateProjectRequest{Name: "second"}, http.StatusCreated, &p)
	var key apiv1.CreatedKey
	s.call("POST", "/api/v1/org/default/keys", apiv1.CreateKeyRequest{Name: "second", ProjectID: p.ID}, http.StatusCreated, &key)
	var mine apiv1.RuntimeList
	s.callKey(key.Secret, "GET", runtimesPath, nil, http.StatusOK, &mine)
	if len(mine.Items) != 1 || mine.Items[0].ID != p.RuntimeID || mine.NextCursor != "" {
		t.Fatalf("a project key's runtimes: %+v", mine)
	}
	for _, call := range [][2]string{{"GET", ""}, {"PATCH", ""}, {"POST", "/start"}, {"POST", "/reset"}, {"GET", "/capabilities"}, {"GET", "/capabilities/resolved"}} {
		var body any
		if call[0] != "GET" {
			body = map[string]any{}
		}
		s.failKey(key.Secret, call[0], path+call[1], body, http.StatusNotFound, "not found")
	}
	s.callKey(key.Secret, "GET", runtimesPath+"/"+p.RuntimeID, nil, http.StatusOK, nil)
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
	var sec apiv1.Secret
	s.call("POST", "/api/v1/org/default/secrets", map[string]any{"name": "API_TOKEN", "value": "tok"}, http.StatusCreated, &sec)
	s.call("PATCH", path, map[string]any{"labels": map[string]string{"team": "ml"}, "timeout": 300, "env": map[string]string{"MODE": "dev"}, "ports": []int{3000}}, http.StatusOK, nil)
	s.call("POST", path+"/start", map[string]any{"requested_runtime_limit_seconds": 120, "secret_ids": []string{sec.ID}}, http.StatusOK, &rt)
	if ports := s.get(rt.Sandbox.ID).Ports; len(ports) != 1 || ports[0].Port != 3000 || !strings.HasPrefix(ports[0].URL, "http://3000-"+rt.SandboxID+".") {
		t.Errorf("the runtime's ports in its sandbox's detail: %+v", ports)
	}
	if names := strings.Join(rt.Sandbox.EnvVarNames, ","); names != "API_TOKEN,MODE" {
		t.Fatalf("the chosen secret and the runtime's env in the sandbox's env: %s", names)
	}
	if rt.Status != "running" || rt.Sandbox == nil || rt.Sandbox.State != "running" || rt.Sandbox.Kind != "runtime" || rt.SandboxID != rt.Sandbox.SandboxID ||
		rt.Sandbox.Metadata["team"] != "ml" || rt.Sandbox.Metadata["sbx.runtime_id"] != rt.ID || rt.Sandbox.EstimatedTotalCredits == "" {
		t.Fatalf("started: %+v %+v", rt, rt.Sandbox)
	}
	first := rt.SandboxID
	if len(rt.Sandbox.Timeline) == 0 {
		t.Fatalf("a runtime's answer shows its sandbox's timeline: %+v", rt.Sandbox)
	}
	s.call("GET", runtimesPath, nil, http.StatusOK, &list)
	if it := list.Items[0]; it.Status != "running" || it.SandboxID != first || it.Sandbox != nil {
		t.Fatalf("listed while running: %+v", it)
	}
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
	if sb := s.get(rt.SandboxID); sb.Timeout != 300 || strings.Join(sb.EnvVarNames, ",") != "MODE" {
		t.Fatalf("the configured timeout, and no secret a start did not choose: %d %v", sb.Timeout, sb.EnvVarNames)
	}
	// A runtime's sandbox deleted through the sandbox API leaves it idle.
	s.call("DELETE", "/api/v1/sandboxes/"+rt.SandboxID, nil, http.StatusOK, nil)
	s.call("GET", path, nil, http.StatusOK, &rt)
	if rt.Status != "idle" {
		t.Fatalf("after its sandbox was deleted: %+v", rt)
	}
}

// sbx runtime drives the key's project's runtime without naming it, and
// any runtime named, through a real serve.
func TestRuntimeCLI(t *testing.T) {
	s := startServer(t, serverOpts{})
	out := s.ok("runtime", "list")
	if !strings.Contains(out, "idle") || !strings.Contains(out, "base") {
		t.Fatalf("list:\n%s", out)
	}
	out = s.ok("runtime", "set", "--cpu", "0.5", "--memory", "128", "--port", "8080", "--env", "MODE=dev", "--env", "LIST=a,b", "--label", "team=ml", "--timeout", "20m")
	if !strings.Contains(out, "0.5 vCPU, 128 MB memory") || !strings.Contains(out, "8080") || !strings.Contains(out, "LIST, MODE") || !strings.Contains(out, "team=ml") || !strings.Contains(out, "1200s") {
		t.Fatalf("set:\n%s", out)
	}
	if _, stderr, code := s.cli("runtime", "set"); code != 2 || !strings.Contains(stderr, "needs at least one of") {
		t.Fatalf("set without flags: %d %s", code, stderr)
	}
	if _, stderr, code := s.cli("runtime", "pause"); code == 0 || !strings.Contains(stderr, "it has no sandbox (it is idle); start it first") {
		t.Fatalf("pause while idle: %d %s", code, stderr)
	}
	s.ok("secret", "set", "API_TOKEN", "--value", "tok-123")
	if _, stderr, code := s.cli("runtime", "start", "--secret", "NO_SUCH"); code == 0 || !strings.Contains(stderr, "NO_SUCH") {
		t.Fatalf("start with an unknown secret: %d %s", code, stderr)
	}
	out = s.ok("runtime", "start", "--limit", "600", "--secret", "API_TOKEN")
	if !strings.Contains(out, " running, sandbox ") {
		t.Fatalf("start:\n%s", out)
	}
	var rt apiv1.Runtime
	if err := json.Unmarshal([]byte(s.ok("runtime", "get", "--json")), &rt); err != nil || rt.Sandbox == nil || rt.Sandbox.Timeout != 600 || rt.Sandbox.CPU != 0.5 {
		t.Fatalf("get --json: %+v %v", rt, err)
	}
	if out := s.ok("runtime", "get", rt.ID); !strings.Contains(out, "Sandbox ID:") || !strings.Contains(out, "Status:") {
		t.Fatalf("get:\n%s", out)
	}
	if out := s.ok("runtime", "pause", rt.ID); !strings.Contains(out, "paused, sandbox") {
		t.Fatalf("pause:\n%s", out)
	}
	if out := s.ok("runtime", "resume"); !strings.Contains(out, "running") {
		t.Fatalf("resume:\n%s", out)
	}
	if out := s.ok("runtime", "keepalive", "--extend", "30m"); !strings.Contains(out, "expires") {
		t.Fatalf("keepalive:\n%s", out)
	}
	if out := s.ok("runtime", "reset"); !strings.HasSuffix(strings.TrimSpace(out), " idle") {
		t.Fatalf("reset:\n%s", out)
	}
	if _, stderr, code := s.cli("runtime", "get", "nope"); code == 0 || !strings.Contains(stderr, "runtime nope not found") {
		t.Fatalf("get of an unknown runtime: %d %s", code, stderr)
	}
}

// The Go client's runtime calls against a real serve.
func TestRuntimeGoClient(t *testing.T) {
	s := startServer(t, serverOpts{})
	ctx := context.Background()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	list, err := c.Runtimes(ctx, "default", "default", client.Page{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("runtimes: %+v %v", list, err)
	}
	id := list.Items[0].ID
	var apiErr *apiv1.Error
	if _, err := c.PauseRuntime(ctx, "default", "default", id); !errors.As(err, &apiErr) || apiErr.Code != http.StatusConflict {
		t.Fatalf("pause while idle: %v", err)
	}
	ports := []int{3000}
	if rt, err := c.UpdateRuntime(ctx, "default", "default", id, apiv1.UpdateRuntimeRequest{Ports: &ports}); err != nil || len(rt.Config.Ports) != 1 {
		t.Fatalf("update: %+v %v", rt, err)
	}
	rt, err := c.StartRuntime(ctx, "default", "default", id, apiv1.StartRuntimeRequest{})
	if err != nil || rt.Status != "running" {
		t.Fatalf("start: %+v %v", rt, err)
	}
	for _, step := range []struct {
		name string
		call func() (*apiv1.Runtime, error)
		want string
	}{
		{"pause", func() (*apiv1.Runtime, error) { return c.PauseRuntime(ctx, "default", "default", id) }, "paused"},
		{"resume", func() (*apiv1.Runtime, error) { return c.ResumeRuntime(ctx, "default", "default", id) }, "running"},
		{"keepalive", func() (*apiv1.Runtime, error) { return c.KeepaliveRuntime(ctx, "default", "default", id, time.Hour) }, "running"},
		{"get", func() (*apiv1.Runtime, error) { return c.Runtime(ctx, "default", "default", id) }, "running"},
		{"reset", func() (*apiv1.Runtime, error) { return c.ResetRuntime(ctx, "default", "default", id) }, "idle"},
	} {
		if rt, err := step.call(); err != nil || rt.Status != step.want {
			t.Fatalf("%s: %+v %v", step.name, rt, err)
		}
	}
}

// A start with a secret the caller may not choose is refused before any
// sandbox is made; SBX_ACCESS_TOKEN may be no env's, nor a secret's; a provider that
// runs no sbx agent starts a runtime with capabilities but says in the
// timeline that it could not materialize them.
func TestRuntimeStartRefusalsAndSkips(t *testing.T) {
	s := startServer(t, serverOpts{})
	var list apiv1.RuntimeList
	s.call("GET", runtimesPath, nil, http.StatusOK, &list)
	path := runtimesPath + "/" + list.Items[0].ID
	s.fail("POST", path+"/start", map[string]any{"secret_ids": []string{"no-such-secret"}}, http.StatusNotFound, "no-such-secret")
	s.fail("PATCH", path, map[string]any{"env": map[string]string{"SBX_ACCESS_TOKEN": "x"}}, http.StatusBadRequest, "SBX_ACCESS_TOKEN is reserved")
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "envVars": map[string]string{"SBX_ACCESS_TOKEN": "x"}}, http.StatusBadRequest, "SBX_ACCESS_TOKEN is reserved")
	s.fail("POST", "/api/v1/org/default/secrets", map[string]any{"name": "SBX_ACCESS_TOKEN", "value": "x"}, http.StatusBadRequest, "SBX_ACCESS_TOKEN is reserved")
	if len(s.listAll("")) != 0 {
		t.Fatalf("a refused start made a sandbox: %+v", s.listAll(""))
	}

	s.call("POST", path+"/capabilities", map[string]any{"name": "git-toolkit"}, http.StatusCreated, nil)
	var rt apiv1.Runtime
	s.call("POST", path+"/start", nil, http.StatusOK, &rt)
	if steps(*rt.Sandbox) == "" || !strings.Contains(steps(*rt.Sandbox), "capabilities_skipped") {
		t.Fatalf("timeline: %s", steps(*rt.Sandbox))
	}
}
