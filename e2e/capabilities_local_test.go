package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/capability"
	"github.com/sbxdev/sbx/client"
)

// agentSandbox is capability.Sandbox over a sandbox's agent, through
// serve's proxy with the Go client.
type agentSandbox struct {
	c  *client.Client
	id string
}

func (a agentSandbox) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	if _, err := a.c.Files(a.id).Write(ctx, path, bytes.NewReader(data)); err != nil {
		return err
	}
	res, err := a.c.Commands(a.id).RunArgs(ctx, []string{"chmod", fmt.Sprintf("%o", mode.Perm()), path}, nil)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("chmod %s: %s", path, res.Stderr)
	}
	return err
}

func (a agentSandbox) Run(ctx context.Context, script string, env map[string]string, timeout time.Duration) (int, string, error) {
	res, err := a.c.Commands(a.id).RunArgs(ctx, []string{"/bin/sh", "-c", script}, &client.CommandOptions{Env: env, Timeout: timeout})
	if err != nil {
		return 0, "", err
	}
	return res.ExitCode, res.Stdout + res.Stderr, nil
}

// A runtime's resolved capabilities materialized in a real sandbox of the
// base template: git-toolkit's check passes as base is; its identity flag's
// dependency is checked, installed and checked again; a dependency whose
// install fails is reported with its output; resolved.json in the sandbox
// is what the API answers, and a login shell has the tools and the env.
func TestCapabilitiesInLocalSandbox(t *testing.T) {
	s := localServer(t, false)
	ctx := context.Background()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})

	team := teamTools("1.0.0")
	team[0].body += "  - {name: broken, check: \"command -v no-such-tool\", install: \"echo 'E: Unable to locate package no-such-tool' >&2; exit 100\"}\n"
	team[0].body = strings.Replace(team[0].body, "dependencies: [{name: sh, check: \"command -v sh\"}]\n", "dependencies:\n  - {name: sh, check: \"command -v sh\"}\n", 1)
	archive := targz(t, team...)
	if _, err := c.UploadCapability(ctx, "default", archive); err != nil {
		t.Fatal(err)
	}
	var runtimes apiv1.RuntimeList
	s.call("GET", runtimesPath, nil, http.StatusOK, &runtimes)
	rt := runtimes.Items[0].ID
	for _, req := range []apiv1.InstallCapabilityRequest{{Name: "git-toolkit", Flags: map[string]bool{"identity": true}}, {Name: "team-tools"},
		{Name: "python-data", Enabled: new(bool)}} {
		if _, err := c.InstallCapability(ctx, "default", "default", rt, req); err != nil {
			t.Fatal(err)
		}
	}
	view, err := c.ResolvedCapabilities(ctx, "default", "default", rt)
	if err != nil {
		t.Fatal(err)
	}
	git, _ := capability.CatalogBundle("git-toolkit", "1.0.0")
	teamBundle, err := capability.LoadArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	r := capability.Resolved{ResolvedCapabilities: *view, Bundles: map[string]*capability.Bundle{"git-toolkit": git, "team-tools": teamBundle}}

	sb := s.create(map[string]any{"waitReady": true})
	steps, err := capability.Materialize(ctx, agentSandbox{c, sb.ID}, r)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range steps {
		got = append(got, st.String())
	}
	for _, want := range []string{
		"git-toolkit: write ok: git-toolkit 1.0.0: 4 files",
		"team-tools: write ok: team-tools 1.0.0: 3 files",
		"capabilities: write ok: resolved set of 2 capabilities (3 tools, 1 skills, 1 MCP servers, 1 prompts, 1 conflicts)",
		"git-toolkit: check ok: git: ok",
		"git-toolkit: check failed: git-identity: exit 1",
		"git-toolkit: install ok: git-identity: ok",
		"git-toolkit: check ok: git-identity after install: ok",
		"team-tools: check ok: sh: ok",
		"team-tools: check failed: broken: exit 127",
		"team-tools: install failed: broken: exit 100: E: Unable to locate package no-such-tool",
		"team-tools: check failed: broken after install: exit 127",
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("no step %q in:\n%s", want, strings.Join(got, "\n"))
		}
	}

	run := func(cmd string) string {
		t.Helper()
		res, err := c.Commands(sb.ID).Run(ctx, cmd, nil)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%s: %v %+v", cmd, err, res)
		}
		return res.Stdout
	}
	var inSandbox, api any
	json.Unmarshal([]byte(run("cat /opt/sbx/capabilities/resolved.json")), &inSandbox)
	data, _ := json.Marshal(view)
	json.Unmarshal(data, &api)
	if inSandbox == nil || mustJSON(t, inSandbox) != mustJSON(t, api) {
		t.Fatalf("resolved.json in the sandbox is not GET …/capabilities/resolved:\n%s\n%s", mustJSON(t, inSandbox), mustJSON(t, api))
	}
	if out := run("cd /workspace && git init -q -b main repo && cd repo && echo hi > a && git add a && git commit -q -m First && git-summary"); !strings.Contains(out, "branch:     main") ||
		!strings.Contains(out, "sbx agent: First") {
		t.Fatalf("git-summary in a login shell, committing as the identity installed:\n%s", out)
	}
	if out := run("echo $GIT_PAGER $TEAM; command -v deploy fetch; deploy"); out != "cat ml\n/opt/sbx/bin/deploy\n/opt/sbx/bin/fetch\ndeploy\n" {
		t.Fatalf("env and tools in a login shell: %q", out)
	}
	if out := run("fetch"); out != "team fetch\n" {
		t.Fatalf("team-tools' fetch: %q", out)
	}
	if out := run("test ! -e /opt/sbx/capabilities/python-data && ls /opt/sbx/capabilities/git-toolkit/skills/git-workflows"); out != "SKILL.md\n" {
		t.Fatalf("a disabled capability was written, or a skill was not: %q", out)
	}
}
