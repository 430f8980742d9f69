package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/capability"
	"github.com/sbxdev/sbx/client"
)

// A runtime's capabilities in real sandboxes of the base template, through
// its start: git-toolkit's check passes as base is; its identity flag's
// dependency is checked, installed and checked again; a dependency whose
// install fails is told with its output; each step is in the sandbox's
// timeline; resolved.json in the sandbox is what the API answers, and a
// login shell has the tools and the env. Then bindings changed between
// resets (a capability disabled, a version changed, re-enabled) are what
// the next start materializes, and a secret chosen at one start is gone
// from the next, which does not choose it.
func TestCapabilitiesInLocalSandbox(t *testing.T) {
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})

	team := teamTools("1.0.0")
	team[0].body += "  - {name: broken, check: \"command -v no-such-tool\", install: \"echo 'E: Unable to locate package no-such-tool' >&2; exit 100\"}\n"
	team[0].body = strings.Replace(team[0].body, "dependencies: [{name: sh, check: \"command -v sh\"}]\n", "dependencies:\n  - {name: sh, check: \"command -v sh\"}\n", 1)
	for _, files := range [][]bundleFile{team, teamTools("1.1.0")} {
		if _, err := c.UploadCapability(ctx, "default", targz(t, files...)); err != nil {
			t.Fatal(err)
		}
	}
	var runtimes apiv1.RuntimeList
	s.call("GET", runtimesPath, nil, http.StatusOK, &runtimes)
	rt := runtimes.Items[0].ID
	bindings := map[string]string{}
	for _, req := range []apiv1.InstallCapabilityRequest{{Name: "git-toolkit", Flags: map[string]bool{"identity": true}}, {Name: "team-tools", Version: "1.0.0"},
		{Name: "python-data", Enabled: new(bool)}} {
		b, err := c.InstallCapability(ctx, "default", "default", rt, req)
		if err != nil {
			t.Fatal(err)
		}
		bindings[req.Name] = b.ID
	}
	secret, _, err := c.SetSecret(ctx, "default", apiv1.SetSecretRequest{Name: "API_TOKEN", Value: "s3cret-value"})
	if err != nil {
		t.Fatal(err)
	}

	started, err := c.StartRuntime(ctx, "default", "default", rt, apiv1.StartRuntimeRequest{SecretIDs: []string{secret.ID}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range started.Sandbox.Timeline {
		if strings.HasPrefix(e.Step, "capability_") {
			got = append(got, e.Step+" "+e.Detail)
		}
	}
	for _, want := range []string{
		"capability_write git-toolkit: write ok: git-toolkit 1.0.0: 4 files",
		"capability_write team-tools: write ok: team-tools 1.0.0: 3 files",
		"capability_write capabilities: write ok: resolved set of 2 capabilities (3 tools, 1 skills, 1 MCP servers, 1 prompts, 1 conflicts)",
		"capability_check git-toolkit: check ok: git: ok",
		"capability_check_failed git-toolkit: check failed: git-identity: exit 1",
		"capability_install git-toolkit: install ok: git-identity: ok",
		"capability_check git-toolkit: check ok: git-identity after install: ok",
		"capability_check team-tools: check ok: sh: ok",
		"capability_check_failed team-tools: check failed: broken: exit 127",
		"capability_install_failed team-tools: install failed: broken: exit 100: E: Unable to locate package no-such-tool",
		"capability_check_failed team-tools: check failed: broken after install: exit 127",
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("no step %q in the timeline:\n%s", want, strings.Join(got, "\n"))
		}
	}

	sb := runtimeSandbox(t, ctx, c, started)
	resolvedMatches(t, ctx, c, sb, rt)
	if out := runIn(t, ctx, sb, "cd /workspace && git init -q -b main repo && cd repo && echo hi > a && git add a && git commit -q -m First && git-summary"); !strings.Contains(out, "branch:     main") ||
		!strings.Contains(out, "sbx agent: First") {
		t.Fatalf("git-summary in a login shell, committing as the identity installed:\n%s", out)
	}
	if out := runIn(t, ctx, sb, "echo $GIT_PAGER $TEAM $API_TOKEN; command -v deploy fetch; deploy"); out != "cat ml s3cret-value\n/opt/sbx/bin/deploy\n/opt/sbx/bin/fetch\ndeploy\n" {
		t.Fatalf("env, the secret and tools in a login shell: %q", out)
	}
	if out := runIn(t, ctx, sb, "fetch"); out != "team fetch\n" {
		t.Fatalf("team-tools' fetch: %q", out)
	}
	if out := runIn(t, ctx, sb, "test ! -e /opt/sbx/capabilities/python-data && ls /opt/sbx/capabilities/git-toolkit/skills/git-workflows"); out != "SKILL.md\n" {
		t.Fatalf("a disabled capability was written, or a skill was not: %q", out)
	}

	// Disabled and version-changed while running, then reset and started
	// again without the secret: the new sandbox has what the bindings say.
	off, v11 := false, "1.1.0"
	if _, err := c.UpdateCapability(ctx, "default", "default", rt, bindings["git-toolkit"], apiv1.UpdateCapabilityRequest{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateCapability(ctx, "default", "default", rt, bindings["team-tools"], apiv1.UpdateCapabilityRequest{Version: &v11}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetRuntime(ctx, "default", "default", rt); err != nil {
		t.Fatal(err)
	}
	again, err := c.StartRuntime(ctx, "default", "default", rt, apiv1.StartRuntimeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sb = runtimeSandbox(t, ctx, c, again)
	resolvedMatches(t, ctx, c, sb, rt)
	if out := runIn(t, ctx, sb, `test ! -e /opt/sbx/capabilities/git-toolkit && grep -h '^version' /opt/sbx/capabilities/team-tools/capability.yaml; echo "[$API_TOKEN]"`); out != "version: 1.1.0\n[]\n" {
		t.Fatalf("after reset, git-toolkit disabled, team-tools 1.1.0 and no secret: %q", out)
	}

	// Re-enabled: present again after the next reset, with its flag kept.
	on := true
	if _, err := c.UpdateCapability(ctx, "default", "default", rt, bindings["git-toolkit"], apiv1.UpdateCapabilityRequest{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ResetRuntime(ctx, "default", "default", rt); err != nil {
		t.Fatal(err)
	}
	if again, err = c.StartRuntime(ctx, "default", "default", rt, apiv1.StartRuntimeRequest{}); err != nil {
		t.Fatal(err)
	}
	sb = runtimeSandbox(t, ctx, c, again)
	resolvedMatches(t, ctx, c, sb, rt)
	if out := runIn(t, ctx, sb, "git config user.name"); out != "sbx agent\n" {
		t.Fatalf("git-toolkit re-enabled with its identity flag: %q", out)
	}
	if _, err := c.ResetRuntime(ctx, "default", "default", rt); err != nil {
		t.Fatal(err)
	}
}

// resolvedMatches checks that resolved.json in sb is what the API answers
// as the runtime's resolved capabilities.
func resolvedMatches(t *testing.T, ctx context.Context, c *client.Client, sb *client.Sandbox, runtime string) {
	t.Helper()
	view, err := c.ResolvedCapabilities(ctx, "default", "default", runtime)
	if err != nil {
		t.Fatal(err)
	}
	var inSandbox, api any
	json.Unmarshal([]byte(runIn(t, ctx, sb, "cat "+capability.ResolvedFile)), &inSandbox)
	data, _ := json.Marshal(view)
	json.Unmarshal(data, &api)
	if inSandbox == nil || mustJSON(t, inSandbox) != mustJSON(t, api) {
		t.Fatalf("resolved.json in the sandbox is not GET …/capabilities/resolved:\n%s\n%s", mustJSON(t, inSandbox), mustJSON(t, api))
	}
}
