package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// Code contexts on real Jupyter kernels in a gVisor sandbox of the
// code-interpreter template: state kept between runs, a DataFrame as HTML,
// a figure as a PNG of its size, an exception's name, value and traceback,
// output streamed while the code still runs, a timeout that interrupts and
// leaves the context usable, two contexts apart, and state kept across a
// pause and a hibernation.
func TestCodeContextsLocal(t *testing.T) {
	if _, err := testtemplates.Catalog("code-interpreter"); err != nil {
		t.Fatal(err)
	}
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	sb, err := c.Create(ctx, "code-interpreter", &client.CreateOptions{WaitReady: true, Timeout: time.Hour, MemoryMB: 1024})
	if err != nil {
		t.Fatal(err)
	}
	run := func(code string, opts *client.CodeOptions) *client.Execution {
		t.Helper()
		ex, err := sb.Code.Run(ctx, code, opts)
		if err != nil {
			t.Fatalf("%s: %v", code, err)
		}
		return ex
	}
	if ex := run("x = 41", nil); ex.End.Status != "ok" || ex.End.ExecutionCount != 1 || ex.End.ContextID == "" {
		t.Fatalf("x = 41: %+v", ex)
	}
	if ex := run("x + 1", nil); ex.Text() != "42" || ex.End.ExecutionCount != 2 {
		t.Errorf("x + 1: %+v", ex)
	}
	if ex := run("import pandas as pd\npd.DataFrame({'a': [1, 2], 'b': [3, 4]})", nil); !strings.Contains(ex.Results[0].Data["text/html"].(string), "<table") {
		t.Errorf("a DataFrame: %+v", ex.Results)
	}
	ex := run("%config InlineBackend.print_figure_kwargs = {'bbox_inches': None}\nimport matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 3, 2])", nil)
	var pngs int
	for _, r := range ex.Results {
		if b64, ok := r.Data["image/png"].(string); ok {
			data, _ := base64.StdEncoding.DecodeString(b64)
			img, err := png.Decode(bytes.NewReader(data))
			if err != nil || img.Bounds().Dx() != 400 || img.Bounds().Dy() != 300 {
				t.Errorf("the figure: %v, %v", err, img)
			}
			pngs++
		}
	}
	if pngs != 1 {
		t.Errorf("a plot without plt.show(): %d PNG results of %+v", pngs, ex.Results)
	}
	if ex := run("1 / 0", nil); ex.Error == nil || ex.Error.Name != "ZeroDivisionError" || ex.Error.Value != "division by zero" || len(ex.Error.Traceback) == 0 || ex.End.Status != "error" {
		t.Errorf("an exception: %+v", ex)
	}

	// Output comes while the code runs: the context is busy when the first line arrives.
	var busy bool
	run("import time\nprint('first', flush=True)\ntime.sleep(2)\nprint('second')", &client.CodeOptions{OnStdout: func(text string) {
		if strings.HasPrefix(text, "first") {
			l, err := sb.Code.Contexts(ctx)
			busy = err == nil && len(l.Items) == 1 && l.Items[0].State == "busy"
		}
	}})
	if !busy {
		t.Error("the first line of output came after the run ended")
	}
	if ex := run("while True: pass", &client.CodeOptions{Timeout: 2 * time.Second}); ex.End.Status != "timeout" || ex.Error == nil || ex.Error.Name != "KeyboardInterrupt" {
		t.Errorf("a timeout: %+v", ex)
	}
	if ex := run("x", nil); ex.Text() != "41" {
		t.Errorf("after a timeout: %+v", ex)
	}

	// Two contexts keep apart; one that does not exist is a 404.
	other, err := sb.Code.CreateContext(ctx, apiv1.CreateCodeContextRequest{Cwd: "/tmp"})
	if err != nil || other.State != "new" {
		t.Fatalf("a second context: %+v %v", other, err)
	}
	if ex := run("import os\nx = 'other'\nos.getcwd()", &client.CodeOptions{ContextID: other.ID}); ex.Text() != "'/tmp'" {
		t.Errorf("the second context: %+v", ex)
	}
	if ex := run("x", nil); ex.Text() != "41" {
		t.Errorf("the default context after the second's x: %+v", ex)
	}
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/code/execute", map[string]any{"code": "1", "contextId": "nope"}, http.StatusNotFound, "does not exist")
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/code/contexts", map[string]any{"language": "cobol"}, http.StatusBadRequest, "language")

	// State lives across a pause and a hibernation.
	for _, hibernate := range []bool{false, true} {
		s.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/pause", map[string]any{"hibernate": hibernate}, http.StatusOK, nil)
		s.call("POST", "/api/v1/sandboxes/"+sb.ID()+"/resume", map[string]any{}, http.StatusOK, nil)
		if ex := run("x += 1\nx", nil); ex.Text() == "" {
			t.Errorf("after a pause (hibernate %v): %+v", hibernate, ex)
		}
	}
	if ex := run("x", nil); ex.Text() != "43" {
		t.Errorf("x after two pauses: %+v", ex)
	}
	// A kernel that dies leaves its context dead, saying so, until restarted.
	if ex := run("import os\nos._exit(3)", &client.CodeOptions{ContextID: other.ID}); ex.Error == nil || ex.Error.Name != "KernelDied" {
		t.Errorf("a kernel that dies: %+v", ex)
	}
	if l, _ := sb.Code.Contexts(ctx); !slices.ContainsFunc(l.Items, func(c apiv1.CodeContext) bool { return c.ID == other.ID && c.State == "dead" && c.Error != "" }) {
		t.Errorf("the dead context: %+v", l)
	}
	s.fail("POST", "/api/v1/sandboxes/"+sb.ID()+"/code/execute", map[string]any{"code": "1", "contextId": other.ID}, http.StatusConflict, "restart it")
	// A restart forgets; a deleted context is gone.
	if _, err := sb.Code.RestartContext(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if ex := run("x", &client.CodeOptions{ContextID: other.ID}); ex.Error == nil || ex.Error.Name != "NameError" {
		t.Errorf("x after a restart: %+v", ex)
	}
	if err := sb.Code.DeleteContext(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if l, err := sb.Code.Contexts(ctx); err != nil || len(l.Items) != 1 {
		t.Errorf("contexts after a delete: %+v %v", l, err)
	}
	if err := sb.Code.Interrupt(ctx, l0(t, sb, ctx)); err != nil {
		t.Errorf("interrupting an idle context: %v", err)
	}

	// A bash context keeps cd and variables; a failing command is an error
	// with its status; a timeout interrupts what it runs, and it goes on.
	if ex := run("cd /tmp && GREETING=hi", &client.CodeOptions{Language: "bash"}); ex.End.Status != "ok" {
		t.Errorf("bash: %+v", ex)
	}
	if ex := run("echo \"$GREETING from $(pwd)\"; echo oops >&2", &client.CodeOptions{Language: "bash"}); ex.Stdout != "hi from /tmp\n" || ex.Stderr != "oops\n" {
		t.Errorf("bash's state: %+v", ex)
	}
	if ex := run("false", &client.CodeOptions{Language: "bash"}); ex.End.Status != "error" || ex.Error == nil || ex.Error.Value != "exit status 1" {
		t.Errorf("bash false: %+v", ex)
	}
	if ex := run("sleep 100", &client.CodeOptions{Language: "bash", Timeout: time.Second}); ex.End.Status != "timeout" {
		t.Errorf("bash sleep with a timeout: %+v", ex)
	}
	if ex := run("echo $GREETING", &client.CodeOptions{Language: "bash"}); ex.Stdout != "hi\n" {
		t.Errorf("bash after a timeout: %+v", ex)
	}

	// The CLI: text results printed, images saved, an error's traceback and exit 1.
	dir := t.TempDir()
	cmd := exec.Command(sbxBin, "run-code", sb.Data().SandboxID, "--out", dir)
	cmd.Env = append(os.Environ(), "SBX_URL="+s.url, "SBX_DATA_DIR="+s.dataDir, "SBX_API_KEY=")
	cmd.Stdin = strings.NewReader("print('from the CLI')\nplt.figure(figsize=(2, 2), dpi=50)\nplt.plot([1, 2])\nx")
	got, err := cmd.Output()
	if err != nil || !strings.Contains(string(got), "from the CLI\n") || !strings.Contains(string(got), "43") {
		t.Errorf("sbx run-code: %v\n%s", err, got)
	}
	if pngs, _ := filepath.Glob(filepath.Join(dir, "*.png")); len(pngs) != 1 {
		t.Errorf("sbx run-code --out saved %v", pngs)
	}
	boom := filepath.Join(dir, "boom.py")
	os.WriteFile(boom, []byte("raise ValueError('boom')\n"), 0o644)
	if _, errOut, code := s.cli("run-code", sb.Data().SandboxID, boom); code != 1 || !strings.Contains(errOut, "ValueError") || !strings.Contains(errOut, "boom") {
		t.Errorf("sbx run-code of a raise: exit %d, %q", code, errOut)
	}
}

// l0 is the ID of the sandbox's first code context.
func l0(t *testing.T, sb *client.Sandbox, ctx context.Context) string {
	l, err := sb.Code.Contexts(ctx)
	if err != nil || len(l.Items) == 0 {
		t.Fatalf("contexts: %+v %v", l, err)
	}
	return l.Items[0].ID
}

// A javascript context, in a sandbox of the node template: declarations
// with var and globals persist, console output streams, the last
// expression's value is a result (a promise awaited), an error has its
// name and stack; a template without node says so.
func TestJavaScriptContextLocal(t *testing.T) {
	if _, err := testtemplates.Catalog("node"); err != nil {
		t.Fatal(err)
	}
	s := localServer(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	sb, err := c.Create(ctx, "node", &client.CreateOptions{WaitReady: true, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	js := &client.CodeOptions{Language: "javascript"}
	run := func(code string) *client.Execution {
		t.Helper()
		ex, err := sb.Code.Run(ctx, code, js)
		if err != nil {
			t.Fatalf("%s: %v", code, err)
		}
		return ex
	}
	if ex := run("var x = 41; console.log('hi')"); ex.Stdout != "hi\n" || ex.End.Status != "ok" {
		t.Errorf("var x: %+v", ex)
	}
	if ex := run("x + 1"); ex.Text() != "42" || ex.End.ExecutionCount != 2 {
		t.Errorf("x + 1: %+v", ex)
	}
	if ex := run("Promise.resolve({a: [1, 2]})"); ex.Text() != "{ a: [ 1, 2 ] }" {
		t.Errorf("a promise: %+v", ex)
	}
	if ex := run("null.x"); ex.Error == nil || ex.Error.Name != "TypeError" || len(ex.Error.Traceback) == 0 || ex.End.Status != "error" {
		t.Errorf("an error: %+v", ex)
	}
	base, err := c.Create(ctx, "base", &client.CreateOptions{WaitReady: true, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	s.fail("POST", "/api/v1/sandboxes/"+base.ID()+"/code/execute", map[string]any{"code": "1", "language": "javascript"}, http.StatusServiceUnavailable, "node is not in this sandbox's template")
}

// A ready template with a warm kernel: a sandbox restored from it has its
// default python context running before its first run.
func TestWarmCodeReadyTemplateLocal(t *testing.T) {
	if _, err := testtemplates.Catalog("code-interpreter"); err != nil {
		t.Fatal(err)
	}
	s := localServer(t, false)
	if out := s.ok("template", "ready", "code-interpreter", "--command", "true", "--warm-code", "python"); !strings.Contains(out, "ready, snapshot ") {
		t.Fatalf("sbx template ready --warm-code: %q", out)
	}
	sb := s.create(map[string]any{"templateID": "code-interpreter", "waitReady": true})
	if !strings.Contains(sb.Timeline[0].Detail, "restored from its ready snapshot") {
		t.Fatalf("a create of the ready template: %+v", sb.Timeline)
	}
	var l apiv1.CodeContextList
	s.call("GET", "/api/v1/sandboxes/"+sb.ID+"/code/contexts", nil, http.StatusOK, &l)
	if len(l.Items) != 1 || l.Items[0].Language != "python" || l.Items[0].State != "idle" || !l.Items[0].Default {
		t.Errorf("contexts of a sandbox restored with a warm kernel: %+v", l)
	}
	c := client.New(client.Options{URL: s.url, APIKey: s.key, HTTPClient: s.http})
	if ex, err := c.Code(sb.ID).Run(context.Background(), "1 + 1", nil); err != nil || ex.Text() != "2" {
		t.Errorf("1 + 1 in the warm kernel: %+v %v", ex, err)
	}
	s.fail("PUT", "/api/v1/admin/templates/code-interpreter/ready", map[string]any{"command": "true", "warmCode": []string{"cobol"}}, http.StatusBadRequest, "cobol")
}
