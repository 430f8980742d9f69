package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const bindingJSON = `{"id":"b-1","runtime_id":"rt-1","name":"git-toolkit","version":"1.0.0","source":"catalog","enabled":true,
	"flags":{"identity":true},"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}`

// The runtime verbs find the runtime of the key's project, and a binding by
// its capability's name.
func TestCapabilityCommands(t *testing.T) {
	const caps = "/api/v1/org/org-1/ws/ws-1/runtimes/rt-1/capabilities"
	a := newAPI(t, map[string]answer{
		"GET /api/v1/me": {200, meJSON},
		"GET /api/v1/org/org-1/ws/ws-1/projects": {200, `{"items":[{"id":"p-0","name":"other","runtime_id":"rt-0"},
			{"id":"p-1","name":"default","workspace_id":"ws-1","runtime_id":"rt-1","created_at":"2026-01-02T03:04:05Z"}]}`},
		"GET /api/v1/org/org-1/ws/research/projects": {200, `{"items":[{"id":"p-9","name":"default","runtime_id":"rt-9"}]}`},
		"POST " + caps:            {201, bindingJSON},
		"GET " + caps:             {200, `{"items":[` + bindingJSON + `]}`},
		"PATCH " + caps + "/b-1":  {200, strings.Replace(bindingJSON, `"enabled":true`, `"enabled":false`, 1)},
		"DELETE " + caps + "/b-1": {200, bindingJSON},
		"GET " + caps + "/resolved": {200, `{"root":"/opt/sbx/capabilities","capabilities":[{"binding_id":"b-1","name":"git-toolkit","version":"1.0.0",
			"source":"catalog","description":"Git.","dir":"/opt/sbx/capabilities/git-toolkit","flags":{"identity":true}}],
			"tools":[{"capability":"git-toolkit","name":"git-summary","description":"","path":"/opt/sbx/capabilities/git-toolkit/tools/git-summary"}],
			"skills":[],"mcp_servers":[],"prompts":[],"dependencies":[],"env":{"GIT_PAGER":"cat"},
			"conflicts":[{"kind":"env","name":"GIT_PAGER","capabilities":["git-toolkit","team"],"used":"git-toolkit","detail":"env GIT_PAGER: git-toolkit sets \"cat\", team sets \"less\"; git-toolkit's value is used"}]}`},
		"GET /api/v1/org/org-9/ws/research/runtimes/rt-9/capabilities": {200, `{"items":[]}`},
		"GET /api/v1/org/org-1/ws/research/runtimes/rt-9/capabilities": {200, `{"items":[]}`},
	})
	code, out, errOut := sbx(t, "capability", "install", "git-toolkit", "--flag", "identity", "--source", "catalog", "--disabled")
	if code != 0 || !strings.Contains(out, "installed git-toolkit 1.0.0 (catalog) on runtime rt-1, enabled, flags identity=true, binding b-1") {
		t.Fatalf("install: %d %q %q", code, out, errOut)
	}
	code, out, _ = sbx(t, "capability", "disable", "git-toolkit")
	if code != 0 || !strings.Contains(out, "git-toolkit 1.0.0 (catalog) on runtime rt-1, disabled") {
		t.Fatalf("disable: %d %q", code, out)
	}
	code, out, _ = sbx(t, "capability", "set", "b-1", "--flag", "identity=false", "--version", "1.0.0")
	if code != 0 {
		t.Fatalf("set: %d %q", code, out)
	}
	code, out, _ = sbx(t, "capability", "resolved")
	for _, want := range []string{"runtime rt-1: 1 enabled capabilities", "git-summary (git-toolkit): /opt/sbx/capabilities/git-toolkit/tools/git-summary",
		"GIT_PAGER=cat", `conflicts:` + "\n" + `  env GIT_PAGER: git-toolkit sets "cat", team sets "less"`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("resolved lacks %q: %d\n%s", want, code, out)
		}
	}
	code, out, _ = sbx(t, "capability", "uninstall", "git-toolkit")
	if code != 0 || !strings.HasPrefix(out, "uninstalled git-toolkit 1.0.0") {
		t.Fatalf("uninstall: %d %q", code, out)
	}
	code, _, errOut = sbx(t, "capability", "enable", "nope")
	if code != 1 || !strings.Contains(errOut, "runtime rt-1 has no capability nope installed (it has git-toolkit)") {
		t.Fatalf("enable unknown: %d %q", code, errOut)
	}
	// Another workspace: its default project's runtime; or the one named.
	code, out, errOut = sbx(t, "capability", "list", "--workspace", "research", "--org", "org-9", "--runtime", "rt-9")
	if code != 0 || !strings.Contains(out, "NAME") {
		t.Fatalf("list --runtime: %d %q %q", code, out, errOut)
	}
	if code, _, errOut = sbx(t, "capability", "list", "--workspace", "research"); code != 0 {
		t.Fatalf("list --workspace research: %d %q", code, errOut)
	}
	for _, bad := range [][]string{{"capability", "set", "git-toolkit"}, {"capability", "install"}, {"capability", "install", "x", "--flag", "a=maybe"}} {
		if code, _, _ := sbx(t, bad...); code != 2 {
			t.Errorf("sbx %s: exit %d, want 2", strings.Join(bad, " "), code)
		}
	}
	wantRequests(t, a,
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/ws/ws-1/projects"},
		seen{Method: "POST", Path: caps, Body: map[string]any{"name": "git-toolkit", "source": "catalog", "flags": map[string]any{"identity": true}, "enabled": false}},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/ws/ws-1/projects"},
		seen{Method: "GET", Path: caps},
		seen{Method: "PATCH", Path: caps + "/b-1", Body: map[string]any{"enabled": false}},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/ws/ws-1/projects"},
		seen{Method: "GET", Path: caps},
		seen{Method: "PATCH", Path: caps + "/b-1", Body: map[string]any{"flags": map[string]any{"identity": false}, "version": "1.0.0"}},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/ws/ws-1/projects"},
		seen{Method: "GET", Path: caps + "/resolved"},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/ws/ws-1/projects"},
		seen{Method: "GET", Path: caps},
		seen{Method: "DELETE", Path: caps + "/b-1"},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/ws/ws-1/projects"},
		seen{Method: "GET", Path: caps},
		seen{Method: "GET", Path: "/api/v1/org/org-9/ws/research/runtimes/rt-9/capabilities"},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/ws/research/projects"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/ws/research/runtimes/rt-9/capabilities"},
	)
}

// upload packs a directory, checking it first.
func TestCapabilityUploadRefusesABadDirectory(t *testing.T) {
	newAPI(t, map[string]answer{"GET /api/v1/me": {200, meJSON}})
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "capability.yaml"), []byte("schema: 1\nname: Team\nversion: 1.0.0\ndescription: x\n"), 0o644)
	code, _, errOut := sbx(t, "capability", "upload", dir)
	if code != 1 || !strings.Contains(errOut, `capability.yaml: name "Team" must be`) {
		t.Fatalf("upload of a bad directory: %d %q", code, errOut)
	}
}
