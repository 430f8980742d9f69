package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
)

// waitBuild polls a build until it ends.
func (s *server) waitBuild(key, template, id string) apiv1.TemplateBuild {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var b apiv1.TemplateBuild
		s.callKey(key, "GET", "/api/v1/templates/"+template+"/builds/"+id, nil, http.StatusOK, &b)
		if b.State == "ready" || b.State == "failed" {
			return b
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("build %s did not end: %+v", id, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A tenant (a member's key, not the operator's) builds a template through
// the API from a recipe on real gVisor sandboxes: packages from the base's
// apt, a file, a command, env, a working directory; it follows the build's
// log as it comes, creates sandboxes of it by name, and sees it listed.
// A step that fails names itself and its output; the server's own names
// are refused; another org sees none of it; deleting it is refused while a
// sandbox stands on it. The CLI builds one with --recipe --follow.
func TestTemplateBuildsLocal(t *testing.T) {
	s := localServer(t, false)
	member, _ := s.memberKey("ada@example.com", "member")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: member, HTTPClient: s.http})

	started, err := c.BuildTemplate(ctx, apiv1.CreateTemplateRequest{Name: "tool", Base: "base",
		Steps: []apiv1.RecipeStep{
			{Packages: []string{"jq"}},
			{File: &apiv1.RecipeFile{Path: "/opt/tool/hello.sh", Content: []byte("#!/bin/sh\necho hello from $GREETING\n"), Mode: "0755"}},
			{Run: "ln -s /opt/tool/hello.sh /usr/local/bin/hello && echo built-step-output"},
		},
		Env: map[string]string{"GREETING": "the recipe"}, Workdir: "/opt/tool"})
	if err != nil {
		t.Fatal(err)
	}
	if started.State != "queued" || started.Steps != 3 || started.Template != "tool" || !strings.HasPrefix(started.TemplateID, "tpl-") {
		t.Fatalf("build: %+v", started)
	}
	var log []string
	if err := c.FollowBuildLog(ctx, started.TemplateID, started.ID, 0, func(l apiv1.BuildLogLine) error {
		log = append(log, l.Text)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(log, "\n")
	b := s.waitBuild(member, "tool", started.ID)
	if b.State != "ready" || b.Version == "" || b.SandboxID == "" {
		t.Fatalf("build: %+v\n%s", b, all)
	}
	for _, want := range []string{"step 1/3: packages jq", "built-step-output", "template tool version " + b.Version + " is ready"} {
		if !strings.Contains(all, want) {
			t.Errorf("the followed log lacks %q:\n%s", want, all)
		}
	}
	if bs := s.get(b.SandboxID); bs.State != "killed" {
		t.Errorf("the build's sandbox after the build: %s", bs.State)
	}

	var list apiv1.TemplateList
	s.callKey(member, "GET", "/api/v1/templates", nil, http.StatusOK, &list)
	var tool apiv1.Template
	for _, tm := range list.Items {
		if tm.Name == "tool" {
			tool = tm
		}
	}
	if tool.ID != b.TemplateID || tool.ProjectID == "" || tool.Version != b.Version || tool.Versions[0].Source != "recipe on template base" {
		t.Fatalf("tool in the list: %+v", tool)
	}
	var sb apiv1.Sandbox
	s.callKey(member, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "tool", "waitReady": true}, http.StatusCreated, &sb)
	if sb.TemplateID != b.TemplateID {
		t.Errorf("a create of tool: template %s", sb.TemplateID)
	}
	if got := s.sh(sb, "hello; pwd; jq -n 1+1"); got != "hello from the recipe\n/opt/tool\n2" {
		t.Errorf("a sandbox of tool: %q", got)
	}
	s.failKey(member, "DELETE", "/api/v1/templates/tool", nil, http.StatusConflict, "in use by sandbox "+sb.SandboxID)

	// A failing step names itself and its output; the template keeps its version.
	var bad apiv1.TemplateBuild
	s.callKey(member, "POST", "/api/v1/templates", map[string]any{"name": "tool", "steps": []map[string]any{{"run": "echo fine"}, {"run": "echo doomed >&2; exit 3"}}}, http.StatusAccepted, &bad)
	bad = s.waitBuild(member, "tool", bad.ID)
	if bad.State != "failed" || bad.Step != 2 || !strings.Contains(bad.Error, "step 2 (run echo doomed >&2; exit 3) failed: exit 3") || !strings.Contains(bad.Error, "doomed") {
		t.Errorf("a failing build: %+v", bad)
	}
	var page apiv1.BuildLogPage
	s.callKey(member, "GET", "/api/v1/templates/tool/builds/"+bad.ID+"/logs?after=1", nil, http.StatusOK, &page)
	if len(page.Lines) == 0 || page.Lines[0].Seq != 2 || !strings.HasPrefix(page.Lines[len(page.Lines)-1].Text, "build failed: step 2") {
		t.Errorf("the failed build's log after line 1: %+v", page.Lines)
	}
	var builds apiv1.TemplateBuildList
	s.callKey(member, "GET", "/api/v1/templates/tool/builds", nil, http.StatusOK, &builds)
	if len(builds.Items) != 2 || builds.Items[0].ID != bad.ID {
		t.Errorf("builds: %+v", builds.Items)
	}
	var still apiv1.Template
	s.callKey(member, "GET", "/api/v1/templates/tool", nil, http.StatusOK, &still)
	if still.Version != b.Version {
		t.Errorf("a failed build changed the version: %+v", still)
	}

	// A tag keeps a version: a create of tool:first starts from it after
	// a rebuild from another recipe.
	var tagged apiv1.Template
	s.callKey(member, "PUT", "/api/v1/templates/tool/tags/first", map[string]any{}, http.StatusOK, &tagged)
	if tagged.Tags["first"] != b.Version {
		t.Errorf("tags after tagging: %+v", tagged.Tags)
	}
	var second apiv1.TemplateBuild
	s.callKey(member, "POST", "/api/v1/templates", map[string]any{"name": "tool", "steps": []map[string]any{{"run": "echo two > /which"}}}, http.StatusAccepted, &second)
	if second = s.waitBuild(member, "tool", second.ID); second.State != "ready" || second.Version == b.Version {
		t.Fatalf("the second build: %+v", second)
	}
	var old, cur apiv1.Sandbox
	s.callKey(member, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "tool:first", "waitReady": true}, http.StatusCreated, &old)
	s.callKey(member, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "tool", "waitReady": true}, http.StatusCreated, &cur)
	if got := s.sh(old, "hello; cat /which 2>/dev/null || echo none"); got != "hello from the recipe\nnone" {
		t.Errorf("a sandbox of tool:first: %q", got)
	}
	if got := s.sh(cur, "cat /which; command -v hello || echo none"); got != "two\nnone" {
		t.Errorf("a sandbox of tool: %q", got)
	}
	s.failKey(member, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "tool:nope"}, http.StatusNotFound, "has no tag nope")
	s.failKey(member, "PUT", "/api/v1/templates/tool/tags/x", map[string]any{"version": "20200101T000000.000000Z"}, http.StatusNotFound, "has no version")
	s.call("PUT", "/api/v1/templates/base/tags/x", map[string]any{}, http.StatusOK, nil)
	s.failKey(member, "DELETE", "/api/v1/templates/base/tags/x", nil, http.StatusForbidden, "operator")
	s.call("DELETE", "/api/v1/templates/base/tags/x", nil, http.StatusNoContent, nil)
	s.callKey(member, "DELETE", "/api/v1/templates/tool/tags/first", nil, http.StatusNoContent, nil)
	s.failKey(member, "DELETE", "/api/v1/templates/tool/tags/first", nil, http.StatusNotFound, "has no tag first")
	for _, x := range []apiv1.Sandbox{old, cur} {
		s.call("DELETE", "/api/v1/sandboxes/"+x.ID, nil, http.StatusOK, nil)
	}

	// A readiness check: passed in the build, the new version's ready
	// snapshot made, and a create restores it with its server up; a check
	// that never passes fails the build, naming it.
	var web apiv1.TemplateBuild
	s.callKey(member, "POST", "/api/v1/templates", map[string]any{"name": "web", "start": "sleep 1; exec /.sbx/sbx agent echo 8080",
		"ready": map[string]any{"port": 8080, "timeout": 60}}, http.StatusAccepted, &web)
	if web = s.waitBuild(member, "web", web.ID); web.State != "ready" {
		t.Fatalf("a build with a readiness check: %+v", web)
	}
	var webLog apiv1.BuildLogPage
	s.callKey(member, "GET", "/api/v1/templates/web/builds/"+web.ID+"/logs", nil, http.StatusOK, &webLog)
	if all := fmt.Sprint(webLog.Lines); !strings.Contains(all, "ready snapshot") || strings.Contains(all, "warning") {
		t.Errorf("the log of a build with a readiness check: %s", all)
	}
	var ws apiv1.Sandbox
	s.callKey(member, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "web", "waitReady": true}, http.StatusCreated, &ws)
	if !strings.Contains(ws.Timeline[0].Detail, "restored from its ready snapshot") {
		t.Errorf("a create of web: %+v", ws.Timeline)
	}
	if got := s.sh(ws, "curl -sf -o /dev/null -w '%{http_code}' localhost:8080/echo"); got != "200" {
		t.Errorf("web's server, at once: %q", got)
	}
	s.call("DELETE", "/api/v1/sandboxes/"+ws.ID, nil, http.StatusOK, nil)
	s.callKey(member, "DELETE", "/api/v1/templates/web", nil, http.StatusNoContent, nil)
	var never apiv1.TemplateBuild
	s.callKey(member, "POST", "/api/v1/templates", map[string]any{"name": "never", "start": "sleep infinity", "ready": map[string]any{"command": "false", "timeout": 2}}, http.StatusAccepted, &never)
	if never = s.waitBuild(member, "never", never.ID); never.State != "failed" || !strings.Contains(never.Error, "the readiness check") {
		t.Errorf("a build whose readiness never comes: %+v", never)
	}
	s.failKey(member, "POST", "/api/v1/templates", map[string]any{"name": "x", "ready": map[string]any{"port": 80}}, http.StatusBadRequest, "needs a start command")
	s.callKey(member, "DELETE", "/api/v1/templates/never", nil, http.StatusNoContent, nil)

	s.failKey(member, "POST", "/api/v1/templates", map[string]any{"name": "base"}, http.StatusConflict, "one of the server's own")
	s.failKey(member, "POST", "/api/v1/templates", map[string]any{"name": "x", "steps": []map[string]any{{"run": "a", "packages": []string{"b"}}}}, http.StatusBadRequest, "exactly one of")
	other := s.otherOrgKey(t)
	s.failKey(other, "GET", "/api/v1/templates/"+b.TemplateID, nil, http.StatusNotFound, "does not exist")
	s.failKey(other, "GET", "/api/v1/templates/"+b.TemplateID+"/builds/"+b.ID+"/logs", nil, http.StatusNotFound, "does not exist")

	s.call("DELETE", "/api/v1/sandboxes/"+sb.ID, nil, http.StatusOK, nil)
	s.callKey(member, "DELETE", "/api/v1/templates/tool", nil, http.StatusNoContent, nil)
	s.failKey(member, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "tool"}, http.StatusNotFound, "does not exist")

	// The CLI, with a recipe file whose file step names a local file.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "motd"), []byte("built by the CLI\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "recipe.json"), []byte(`{"steps": [{"file": {"path": "/etc/motd.sbx", "source": "motd"}}, {"run": "cat /etc/motd.sbx"}]}`), 0o644)
	out, errOut, code := s.cli("template", "build", "cli-made", "--recipe", filepath.Join(dir, "recipe.json"), "--follow")
	if code != 0 || !strings.Contains(out, "cli-made") || !strings.Contains(out, "ready") || !strings.Contains(errOut, "built by the CLI") {
		t.Errorf("sbx template build --recipe --follow: exit %d\n%s%s", code, out, errOut)
	}
	s.ok("template", "rm", "cli-made") // its tree is in the templates directory the tests share
}
