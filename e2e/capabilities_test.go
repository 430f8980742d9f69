package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// bundleFile is one entry of a test bundle's archive.
type bundleFile struct {
	name, body string
	link       string // a symlink to this, when set
}

// targz packs files as a tar.gz, as they are: unsafe entries included.
func targz(t *testing.T, files ...bundleFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: 0o755, Size: int64(len(f.body)), Typeflag: tar.TypeReg}
		if f.link != "" {
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, f.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// teamTools is a bundle that wants some of the catalog's names: the env var
// GIT_PAGER (git-toolkit's), the tool fetch and the MCP server fetch
// (http-toolkit's).
func teamTools(version string, extra ...string) []bundleFile {
	manifest := "schema: 1\nname: team-tools\nversion: " + version + "\ndescription: The team's own tools.\n" +
		"env: {GIT_PAGER: less, TEAM: ml}\n" +
		"tools: [{name: fetch, path: bin/fetch}, {name: deploy, path: bin/deploy}]\n" +
		"mcp_servers: [{name: fetch, transport: http, url: \"https://mcp.example.com/fetch\"}]\n" +
		"dependencies: [{name: sh, check: \"command -v sh\"}]\n" + strings.Join(extra, "")
	return []bundleFile{{name: "capability.yaml", body: manifest}, {name: "bin/fetch", body: "#!/bin/sh\necho team fetch\n"},
		{name: "bin/deploy", body: "#!/bin/sh\necho deploy\n"}}
}

// upload posts a body to the org's inventory with a content type.
func (s *server) upload(key string, body []byte, contentType string) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "POST", s.url+"/api/v1/org/default/capabilities", bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", contentType)
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

// uploadOK uploads a bundle that must be accepted.
func (s *server) uploadOK(files []bundleFile) apiv1.Capability {
	s.t.Helper()
	status, body := s.upload(s.key, targz(s.t, files...), "application/gzip")
	var c apiv1.Capability
	if err := json.Unmarshal(body, &c); status != http.StatusCreated || err != nil {
		s.t.Fatalf("upload: %d %s", status, body)
	}
	return c
}

// uploadFails uploads a body that must be refused with status and detail.
func (s *server) uploadFails(key string, body []byte, contentType string, status int, detail string) {
	s.t.Helper()
	got, data := s.upload(key, body, contentType)
	var e apiv1.Error
	json.Unmarshal(data, &e)
	if got != status || e.Code != status || !strings.Contains(e.Detail, detail) {
		s.t.Fatalf("upload: %d %s, want %d containing %q", got, data, status, detail)
	}
}

// The catalog, the org's inventory and a runtime's capabilities over a real
// serve: uploads good and bad, installs from both sources, disable,
// re-enable, flags, a version change, the resolved view with its conflicts,
// uninstall, refusals, another org, and a restart that keeps it all.
func TestCapabilitiesOverServe(t *testing.T) {
	s := startServer(t, serverOpts{})

	var catalog apiv1.CapabilityList
	s.call("GET", "/api/v1/capabilities/catalog", nil, http.StatusOK, &catalog)
	byName := map[string]apiv1.Capability{}
	for _, c := range catalog.Items {
		byName[c.Name] = c
	}
	if git := byName["git-toolkit"]; git.Version != "1.0.0" || git.Source != "catalog" || len(git.Flags) != 1 || git.Flags[0].Name != "identity" ||
		byName["http-toolkit"].MCPServers[0] != "fetch" || byName["python-data"].Dependencies[0] != "pandas" {
		t.Fatalf("catalog: %+v", catalog)
	}

	// Uploads: good ones, and bad ones refused with what is wrong.
	v1 := s.uploadOK(teamTools("1.0.0"))
	if v1.Name != "team-tools" || v1.Version != "1.0.0" || v1.Source != "inventory" || len(v1.SHA256) != 64 || v1.Size == 0 || v1.CreatedAt == nil {
		t.Fatalf("uploaded: %+v", v1)
	}
	v11 := s.uploadOK(teamTools("1.1.0", "flags: {verbose: {default: false, description: Say more.}}\n"))
	edit := func(from, to string) []byte {
		files := teamTools("1.0.0")
		files[0].body = strings.Replace(files[0].body, from, to, 1)
		return targz(t, files...)
	}
	for _, c := range []struct {
		name   string
		body   []byte
		status int
		detail string
	}{
		{"bad name", edit("name: team-tools", "name: Team_Tools"), 400, `capability.yaml: name "Team_Tools" must be 1-64 lowercase letters, digits or '-'`},
		{"bad version", edit("version: 1.0.0", "version: \"1.0\""), 400, `capability.yaml: version "1.0" must be a semantic version: MAJOR.MINOR.PATCH`},
		{"no description", edit("description: The team's own tools.\n", ""), 400, "capability.yaml: description is required"},
		{"unknown field", edit("schema: 1", "schema: 1\nmcp: {}"), 400, `capability.yaml line 2: unknown field "mcp"`},
		{"escaping path", targz(t, append(teamTools("1.2.0"), bundleFile{name: "../../etc/cron.d/evil", body: "x"})...), 400,
			`archive entry "../../etc/cron.d/evil" must stay inside the bundle (no '..')`},
		{"absolute path", targz(t, append(teamTools("1.2.0"), bundleFile{name: "/etc/passwd", body: "x"})...), 400, `archive entry "/etc/passwd" has an absolute path`},
		{"symlink", targz(t, append(teamTools("1.2.0"), bundleFile{name: "bin/sh", link: "/bin/sh"})...), 400, `archive entry "bin/sh" is a link (to "/bin/sh")`},
		{"missing tool", targz(t, teamTools("1.2.0")[:2]...), 400, `capability.yaml: tools[1].path "bin/deploy" is not a file in the bundle`},
		{"not gzip", []byte("PK\x03\x04 this is a zip"), 400, "the archive is not gzip-compressed (a .tar.gz is wanted)"},
		{"again", targz(t, teamTools("1.0.0")...), 409, "capability team-tools 1.0.0 is already in the org's inventory"},
	} {
		t.Run(c.name, func(t *testing.T) { s.uploadFails(s.key, c.body, "application/gzip", c.status, c.detail) })
	}
	s.uploadFails(s.key, targz(t, teamTools("1.3.0")...), "application/json", 400, "sent with Content-Type: application/gzip")
	var created apiv1.CreatedKey
	var me apiv1.Me
	s.call("GET", "/api/v1/me", nil, http.StatusOK, &me)
	s.call("POST", "/api/v1/org/default/keys", apiv1.CreateKeyRequest{Name: "ci", ProjectID: me.Project.ID}, http.StatusCreated, &created)
	s.uploadFails(created.Secret, targz(t, teamTools("1.3.0")...), "application/gzip", 403, "uploading a capability needs the admin or owner role; this key acts as member")

	var inventory apiv1.CapabilityList
	s.call("GET", "/api/v1/org/default/capabilities?limit=1", nil, http.StatusOK, &inventory)
	if len(inventory.Items) != 1 || inventory.Items[0].Version != "1.0.0" || inventory.NextCursor == "" {
		t.Fatalf("inventory's first page: %+v", inventory)
	}
	s.call("GET", "/api/v1/org/default/capabilities?cursor="+inventory.NextCursor, nil, http.StatusOK, &inventory)
	if len(inventory.Items) != 1 || inventory.Items[0].SHA256 != v11.SHA256 || inventory.Items[0].Flags[0].Name != "verbose" {
		t.Fatalf("inventory's second page: %+v", inventory)
	}

	// Installs on the default project's runtime.
	var runtimes apiv1.RuntimeList
	s.call("GET", runtimesPath, nil, http.StatusOK, &runtimes)
	caps := runtimesPath + "/" + runtimes.Items[0].ID + "/capabilities"
	var git, web, team apiv1.CapabilityBinding
	s.call("POST", caps, map[string]any{"name": "git-toolkit"}, http.StatusCreated, &git)
	if git.Source != "catalog" || git.Version != "1.0.0" || !git.Enabled || len(git.Flags) != 0 || git.RuntimeID != runtimes.Items[0].ID {
		t.Fatalf("git-toolkit: %+v", git)
	}
	s.call("POST", caps, map[string]any{"name": "http-toolkit", "source": "catalog", "flags": map[string]bool{"mcp": false}}, http.StatusCreated, &web)
	s.call("POST", caps, map[string]any{"name": "team-tools", "enabled": false}, http.StatusCreated, &team)
	if team.Source != "inventory" || team.Version != "1.1.0" || team.Enabled || !web.Enabled || web.Flags["mcp"] {
		t.Fatalf("installed: %+v %+v", team, web)
	}
	for _, c := range []struct {
		body   map[string]any
		status int
		detail string
	}{
		{map[string]any{"name": "git-toolkit"}, 409, "capability git-toolkit is already installed on runtime " + git.RuntimeID + " (binding " + git.ID + ", version 1.0.0 from the catalog)"},
		{map[string]any{"name": "nope"}, 404, "capability nope is neither in the org's inventory nor in the catalog"},
		{map[string]any{"name": "python-data", "version": "9.9.9"}, 404, "capability python-data has no version 9.9.9 in the catalog (it has 1.0.0)"},
		{map[string]any{"name": "team-tools", "source": "catalog"}, 404, "capability team-tools is not in the catalog"},
		{map[string]any{"name": "python-data", "flags": map[string]bool{"gpu": true}}, 400, `capability python-data 1.0.0 has no flag "gpu" (its flags: ml, plotting)`},
		{map[string]any{"name": "python-data", "source": "web"}, 400, `source "web" must be inventory or catalog`},
		{map[string]any{"name": "Python"}, 400, `name "Python" must be`},
		{map[string]any{"name": "python-data", "mcp": map[string]any{}}, 400, `field "mcp" is not supported by this API`},
		{map[string]any{"name": "python-data", "color": "red"}, 400, `unknown field "color"`},
	} {
		s.fail("POST", caps, c.body, c.status, c.detail)
	}

	var list apiv1.CapabilityBindingList
	s.call("GET", caps, nil, http.StatusOK, &list)
	if len(list.Items) != 3 || list.Items[0].ID != git.ID || list.Items[2].ID != team.ID {
		t.Fatalf("bindings: %+v", list)
	}

	// The resolved view: team-tools disabled, then enabled with its conflicts.
	resolved := func() apiv1.ResolvedCapabilities {
		t.Helper()
		var r apiv1.ResolvedCapabilities
		s.call("GET", caps+"/resolved", nil, http.StatusOK, &r)
		return r
	}
	r := resolved()
	if len(r.Capabilities) != 2 || r.Env["GIT_PAGER"] != "cat" || len(r.MCPServers) != 0 || len(r.Conflicts) != 0 || len(r.Tools) != 2 ||
		r.Root != "/opt/sbx/capabilities" || r.Capabilities[1].Flags["mcp"] {
		t.Fatalf("resolved, team-tools disabled: %+v", r)
	}
	on, off := true, false
	s.call("PATCH", caps+"/"+team.ID, apiv1.UpdateCapabilityRequest{Enabled: &on}, http.StatusOK, &team)
	s.call("PATCH", caps+"/"+web.ID, apiv1.UpdateCapabilityRequest{Flags: &map[string]bool{"mcp": true}}, http.StatusOK, &web)
	if !team.Enabled || !web.Flags["mcp"] {
		t.Fatalf("enabled and set: %+v %+v", team, web)
	}
	r = resolved()
	conflicts := map[string]apiv1.CapabilityConflict{}
	for _, c := range r.Conflicts {
		conflicts[c.Kind+" "+c.Name] = c
	}
	if c := conflicts["env GIT_PAGER"]; c.Used != "git-toolkit" || strings.Join(c.Capabilities, ",") != "git-toolkit,team-tools" ||
		c.Detail != `env GIT_PAGER: git-toolkit sets "cat", team-tools sets "less"; git-toolkit's value is used` {
		t.Fatalf("env conflict: %+v", r.Conflicts)
	}
	if c := conflicts["tool fetch"]; c.Used != "http-toolkit" || strings.Join(c.Capabilities, ",") != "http-toolkit,team-tools" {
		t.Fatalf("tool conflict: %+v", r.Conflicts)
	}
	if c := conflicts["mcp_server fetch"]; c.Used != "http-toolkit" || len(r.Conflicts) != 3 {
		t.Fatalf("MCP server conflict: %+v", r.Conflicts)
	}
	if len(r.Capabilities) != 3 || r.Env["TEAM"] != "ml" || r.MCPServers[0].Command != "bash" ||
		r.MCPServers[0].Args[0] != "/opt/sbx/capabilities/http-toolkit/mcp/fetch-server.sh" || len(r.Tools) != 3 {
		t.Fatalf("resolved: %+v", r)
	}

	// Disable and enable again; flags must be the version's; a version
	// change keeps the binding.
	s.call("PATCH", caps+"/"+team.ID, apiv1.UpdateCapabilityRequest{Enabled: &off}, http.StatusOK, &team)
	if r = resolved(); len(r.Capabilities) != 2 || len(r.Conflicts) != 0 || len(r.MCPServers) != 1 {
		t.Fatalf("team-tools disabled again: %+v", r)
	}
	s.call("PATCH", caps+"/"+team.ID, apiv1.UpdateCapabilityRequest{Enabled: &on}, http.StatusOK, &team)
	s.call("PATCH", caps+"/"+team.ID, map[string]any{"flags": map[string]bool{"verbose": true}}, http.StatusOK, &team)
	v100 := "1.0.0"
	s.fail("PATCH", caps+"/"+team.ID, apiv1.UpdateCapabilityRequest{Version: &v100}, 400, `capability team-tools 1.0.0 has no flag "verbose" (it declares none)`)
	s.fail("PATCH", caps+"/"+team.ID, map[string]any{"version": "3.0.0"}, 404, "capability team-tools has no version 3.0.0 in the org's inventory (it has 1.0.0, 1.1.0)")
	s.fail("PATCH", caps+"/"+git.ID, map[string]any{"flags": map[string]bool{"nope": true}}, 400, `capability git-toolkit 1.0.0 has no flag "nope" (its flags: identity)`)
	s.fail("PATCH", caps+"/no-such-binding", map[string]any{"enabled": false}, 404, "capability binding no-such-binding not found on runtime")
	s.fail("PATCH", caps+"/"+team.ID, map[string]any{"state": "on"}, 400, `unknown field "state"`)
	s.call("PATCH", caps+"/"+team.ID, map[string]any{"version": "1.0.0", "flags": map[string]bool{}}, http.StatusOK, &team)
	if team.Version != "1.0.0" || len(team.Flags) != 0 || !team.Enabled {
		t.Fatalf("version change down, flags cleared: %+v", team)
	}
	if r = resolved(); r.Capabilities[2].Version != "1.0.0" || len(r.Capabilities[2].Flags) != 0 {
		t.Fatalf("resolved after the version change: %+v", r.Capabilities)
	}
	s.call("PATCH", caps+"/"+team.ID, map[string]any{"version": "1.1.0", "flags": map[string]bool{"verbose": true}}, http.StatusOK, &team)
	if team.Version != "1.1.0" || !team.Enabled || !team.Flags["verbose"] {
		t.Fatalf("version change up: %+v", team)
	}
	if r = resolved(); r.Capabilities[2].Version != "1.1.0" || !r.Capabilities[2].Flags["verbose"] {
		t.Fatalf("resolved after the version change: %+v", r.Capabilities)
	}

	// A bound version stays in the inventory; an unbound one goes.
	s.fail("DELETE", "/api/v1/org/default/capabilities/team-tools/1.1.0", nil, 409,
		"capability team-tools 1.1.0 is installed on runtime "+team.RuntimeID+" (binding "+team.ID+")")
	var removed apiv1.Capability
	s.call("DELETE", "/api/v1/org/default/capabilities/team-tools/1.0.0", nil, http.StatusOK, &removed)
	if removed.Version != "1.0.0" {
		t.Fatalf("removed: %+v", removed)
	}
	s.fail("DELETE", "/api/v1/org/default/capabilities/team-tools/1.0.0", nil, 404, "capability team-tools 1.0.0 is not in the org's inventory")
	s.failKey(created.Secret, "DELETE", "/api/v1/org/default/capabilities/team-tools/1.1.0", nil, 403, "needs the admin or owner role")

	// Another org sees none of it.
	other := s.otherOrgKey(t)
	s.failKey(other, "GET", caps, nil, 404, "org default not found")
	s.failKey(other, "GET", caps+"/resolved", nil, 404, "org default not found")
	s.failKey(other, "POST", caps, map[string]any{"name": "git-toolkit"}, 404, "org default not found")
	s.failKey(other, "GET", "/api/v1/org/default/capabilities", nil, 404, "org default not found")
	var otherInventory apiv1.CapabilityList
	s.callKey(other, "GET", "/api/v1/org/other/capabilities", nil, http.StatusOK, &otherInventory)
	if len(otherInventory.Items) != 0 {
		t.Fatalf("another org's inventory: %+v", otherInventory)
	}
	s.fail("GET", runtimesPath+"/no-such-runtime/capabilities", nil, 404, "runtime no-such-runtime not found")

	// Bindings belong to the runtime and the ledger: a restart keeps them.
	before := resolved()
	s.restart(serverOpts{})
	if after := resolved(); mustJSON(t, after) != mustJSON(t, before) {
		t.Fatalf("the resolved set changed across a restart:\n%s\n%s", mustJSON(t, before), mustJSON(t, after))
	}
	s.call("DELETE", caps+"/"+web.ID, nil, http.StatusOK, &web)
	s.call("GET", caps, nil, http.StatusOK, &list)
	if len(list.Items) != 2 || web.Name != "http-toolkit" {
		t.Fatalf("after uninstall: %+v", list)
	}
	if r = resolved(); len(r.Conflicts) != 1 || r.Conflicts[0].Name != "GIT_PAGER" {
		t.Fatalf("conflicts after uninstalling http-toolkit: %+v", r.Conflicts)
	}
}

func mustJSON(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The capability commands of the CLI against a real serve.
func TestCapabilityCLI(t *testing.T) {
	s := startServer(t, serverOpts{})
	if out := s.ok("capability", "catalog"); !strings.Contains(out, "git-toolkit") || !strings.Contains(out, "python-data") ||
		!strings.Contains(out, "plotting") {
		t.Fatalf("catalog:\n%s", out)
	}
	dir := filepath.Join(t.TempDir(), "team-tools")
	for _, f := range teamTools("1.0.0") {
		p := filepath.Join(dir, f.name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(f.body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out := s.ok("capability", "upload", dir); !strings.HasPrefix(out, "uploaded team-tools 1.0.0 to the inventory of org ") {
		t.Fatalf("upload DIR:\n%s", out)
	}
	archive := filepath.Join(t.TempDir(), "team-tools-1.1.0.tar.gz")
	os.WriteFile(archive, targz(t, teamTools("1.1.0")...), 0o644)
	if out := s.ok("capability", "upload", archive, "--json"); !strings.Contains(out, `"version": "1.1.0"`) {
		t.Fatalf("upload FILE --json:\n%s", out)
	}
	if out := s.ok("capability", "inventory"); !strings.Contains(out, "team-tools  1.0.0") || !strings.Contains(out, "team-tools  1.1.0") {
		t.Fatalf("inventory:\n%s", out)
	}
	if out := s.ok("capability", "install", "git-toolkit", "--flag", "identity"); !strings.Contains(out, "installed git-toolkit 1.0.0 (catalog)") ||
		!strings.Contains(out, "enabled, flags identity=true") {
		t.Fatalf("install:\n%s", out)
	}
	s.ok("capability", "install", "team-tools", "--version", "1.0.0", "--disabled")
	if out := s.ok("capability", "list"); !strings.Contains(out, "team-tools   1.0.0    inventory  disabled") || !strings.Contains(out, "git-toolkit") {
		t.Fatalf("list:\n%s", out)
	}
	if out := s.ok("capability", "resolved"); strings.Contains(out, "team-tools") || !strings.Contains(out, "conflicts:\n  none") {
		t.Fatalf("resolved, team-tools disabled:\n%s", out)
	}
	s.ok("capability", "enable", "team-tools")
	if out := s.ok("capability", "set", "team-tools", "--version", "1.1.0"); !strings.Contains(out, "team-tools 1.1.0 (inventory)") {
		t.Fatalf("set --version:\n%s", out)
	}
	out := s.ok("capability", "resolved")
	for _, want := range []string{"2 enabled capabilities", "git-summary (git-toolkit)", "deploy (team-tools)", "GIT_PAGER=cat",
		`env GIT_PAGER: git-toolkit sets "cat", team-tools sets "less"; git-toolkit's value is used`} {
		if !strings.Contains(out, want) {
			t.Fatalf("resolved lacks %q:\n%s", want, out)
		}
	}
	s.ok("capability", "disable", "git-toolkit")
	s.ok("capability", "set", "git-toolkit", "--flag", "identity=false")
	if out := s.ok("capability", "uninstall", "team-tools"); !strings.HasPrefix(out, "uninstalled team-tools 1.1.0") {
		t.Fatalf("uninstall:\n%s", out)
	}
	var me apiv1.Me
	s.call("GET", "/api/v1/me", nil, http.StatusOK, &me)
	var runtimes apiv1.RuntimeList
	s.call("GET", runtimesPath, nil, http.StatusOK, &runtimes)
	if out := s.ok("capability", "list", "--workspace", "default", "--runtime", runtimes.Items[0].ID, "--json"); !strings.Contains(out, `"enabled": false`) ||
		strings.Contains(out, "team-tools") {
		t.Fatalf("list --runtime --json:\n%s", out)
	}
	if _, errOut, code := s.cli("capability", "install", "nope"); code != 1 || !strings.Contains(errOut, "capability nope is neither in the org's inventory nor in the catalog") {
		t.Fatalf("install unknown: exit %d %s", code, errOut)
	}
	if _, errOut, code := s.cli("capability", "upload", filepath.Join(dir, "nope")); code != 1 || !strings.Contains(errOut, "no such file or directory") {
		t.Fatalf("upload of nothing: exit %d %s", code, errOut)
	}
	if _, errOut, code := s.cli("capability", "enable", "python-data"); code != 1 || !strings.Contains(errOut, "has no capability python-data installed (it has git-toolkit)") {
		t.Fatalf("enable what is not installed: exit %d %s", code, errOut)
	}
}
