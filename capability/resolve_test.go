package capability_test

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/capability"
)

// bundleOf loads a bundle from a manifest and files given as path→content.
func bundleOf(t *testing.T, manifest string, files map[string]string) *capability.Bundle {
	t.Helper()
	fsys := fstest.MapFS{"capability.yaml": {Data: []byte(manifest)}}
	for p, body := range files {
		fsys[p] = &fstest.MapFile{Data: []byte(body), Mode: 0o644}
	}
	b, err := capability.LoadFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func demoBundle(t *testing.T) *capability.Bundle {
	return bundleOf(t, goodManifest, map[string]string{"tools/hello": "#!/bin/sh\necho hello\n", "tools/extra": "#!/bin/sh\necho extra\n",
		"skills/demo/SKILL.md": "# Demo\n", "prompts/reviewer.md": "Review.\n", "server.sh": "cat\n"})
}

// other is a second capability that wants some of demo's names.
const otherManifest = `schema: 1
name: other
version: 0.1.0
description: Another capability.
env: {DEMO: "2", SHARED: same, OTHER: x}
tools: [{name: hello, path: hello.sh}, {name: bye, path: bye.sh}]
mcp_servers: [{name: local, transport: http, url: "https://other.example.com/mcp"}]
`

func binding(name, version string, enabled bool, flags map[string]bool) sbx.CapabilityBinding {
	return sbx.CapabilityBinding{ID: "b-" + name, Name: name, Version: version, Source: sbx.CapabilityInventory, Enabled: enabled, Flags: flags}
}

func TestResolveFlags(t *testing.T) {
	demo := demoBundle(t)
	r := capability.Resolve([]capability.Item{{Binding: binding("demo", "1.2.3", true, nil), Bundle: demo}})
	if len(r.Capabilities) != 1 || len(r.Tools) != 1 || r.Tools[0].Path != "/opt/sbx/capabilities/demo/tools/hello" ||
		r.Capabilities[0].Flags["extra"] || len(r.Capabilities[0].Flags) != 1 || r.Env["DEMO"] != "1" || len(r.Conflicts) != 0 {
		t.Fatalf("defaults: %+v", r.ResolvedCapabilities)
	}
	if s := r.MCPServers[0]; s.Name != "local" || s.Command != "bash" || s.Args[0] != "/opt/sbx/capabilities/demo/server.sh" || s.Env["LEVEL"] != "debug" {
		t.Fatalf("stdio MCP server: %+v", s)
	}
	if s := r.MCPServers[1]; s.Transport != "http" || s.URL != "https://mcp.example.com/mcp" || s.Headers["X-Team"] != "ml" {
		t.Fatalf("http MCP server: %+v", s)
	}
	if r.Skills[0].Path != "/opt/sbx/capabilities/demo/skills/demo" || r.Prompts[0].Path != "/opt/sbx/capabilities/demo/prompts/reviewer.md" ||
		r.Dependencies[0].Timeout != 30 || r.Bundles["demo"] != demo || r.Root != "/opt/sbx/capabilities" {
		t.Fatalf("resolved: %+v", r.ResolvedCapabilities)
	}
	r = capability.Resolve([]capability.Item{{Binding: binding("demo", "1.2.3", true, map[string]bool{"extra": true}), Bundle: demo}})
	if len(r.Tools) != 2 || r.Tools[1].Name != "extra" || !r.Capabilities[0].Flags["extra"] {
		t.Fatalf("extra on: %+v", r.Tools)
	}
	r = capability.Resolve([]capability.Item{{Binding: binding("demo", "1.2.3", false, nil)}})
	if len(r.Capabilities) != 0 || len(r.Tools) != 0 || len(r.Bundles) != 0 {
		t.Fatalf("disabled: %+v", r)
	}
	if data, _ := json.Marshal(r); !strings.Contains(string(data), `"tools":[]`) || strings.Contains(string(data), "null") || strings.Contains(string(data), "Bundles") {
		t.Fatalf("an empty set is empty lists, not nulls: %s", data)
	}
}

// Conflicts are reported with both sides, the first capability by name
// wins, and the result does not depend on the order of the bindings.
func TestResolveConflicts(t *testing.T) {
	demo := demoBundle(t)
	other := bundleOf(t, otherManifest, map[string]string{"hello.sh": "echo hi", "bye.sh": "echo bye"})
	third := bundleOf(t, "schema: 1\nname: third\nversion: 1.0.0\ndescription: x\nenv: {SHARED: same, OTHER: y}\n", nil)
	items := []capability.Item{
		{Binding: binding("third", "1.0.0", true, nil), Bundle: third},
		{Binding: binding("other", "0.1.0", true, nil), Bundle: other},
		{Binding: binding("demo", "1.2.3", true, nil), Bundle: demo},
	}
	r := capability.Resolve(items)
	got := map[string]string{}
	for _, c := range r.Conflicts {
		got[c.Kind+" "+c.Name] = strings.Join(c.Capabilities, ",") + " used " + c.Used + ": " + c.Detail
	}
	want := map[string]string{
		"env DEMO":         `demo,other used demo: env DEMO: demo sets "1", other sets "2"; demo's value is used`,
		"tool hello":       "demo,other used demo: tool hello is defined by demo and other; demo's is /opt/sbx/bin/hello",
		"mcp_server local": "demo,other used demo: MCP server local is defined by demo and other; demo's definition is used",
		"env OTHER":        `other,third used other: env OTHER: other sets "x", third sets "y"; other's value is used`,
	}
	if len(got) != len(want) || len(r.Conflicts) != len(want) {
		t.Fatalf("conflicts: %+v", r.Conflicts)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("conflict %s:\n got %s\nwant %s", k, got[k], v)
		}
	}
	if r.Env["DEMO"] != "1" || r.Env["SHARED"] != "same" || r.Env["OTHER"] != "x" || len(r.Tools) != 2 || r.Tools[1].Name != "bye" ||
		r.Tools[0].Capability != "demo" || len(r.MCPServers) != 2 || r.MCPServers[0].Capability != "demo" {
		t.Fatalf("merged: %+v", r.ResolvedCapabilities)
	}
	if names := []string{r.Capabilities[0].Name, r.Capabilities[1].Name, r.Capabilities[2].Name}; strings.Join(names, ",") != "demo,other,third" {
		t.Fatalf("order: %v", names)
	}
	first, _ := json.Marshal(r)
	for i := range 5 {
		shuffled := []capability.Item{items[(i+1)%3], items[i%3], items[(i+2)%3]}
		if again, _ := json.Marshal(capability.Resolve(shuffled)); string(again) != string(first) {
			t.Fatalf("another order resolves differently:\n%s\n%s", first, again)
		}
	}
}

func TestDescribe(t *testing.T) {
	d := capability.Describe(demoBundle(t).Manifest, sbx.CapabilityCatalog)
	if d.Name != "demo" || d.Source != "catalog" || len(d.Flags) != 1 || d.Flags[0].Name != "extra" || strings.Join(d.Tools, ",") != "hello,extra" ||
		strings.Join(d.MCPServers, ",") != "local,remote" || d.Dependencies[0] != "sh" || d.Prompts[0] != "reviewer" || d.Skills[0] != "demo-skill" {
		t.Fatalf("describe: %+v", d)
	}
}
