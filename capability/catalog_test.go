package capability_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/capability"
)

// The catalog loads: every bundle passes the checks an upload gets, and it
// has at least the three bundles sbx promises.
func TestCatalog(t *testing.T) {
	all, err := capability.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]*capability.Bundle{}
	for _, b := range all {
		names[b.Manifest.Name] = b
		// What an upload of it would make of it.
		data, err := b.Archive()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := capability.LoadArchive(data); err != nil {
			t.Errorf("%s does not load as an upload: %v", b.Manifest.Name, err)
		}
		if len(b.Manifest.Dependencies) == 0 {
			t.Errorf("%s checks nothing in the sandbox", b.Manifest.Name)
		}
	}
	for _, want := range []string{"git-toolkit", "http-toolkit", "python-data"} {
		if names[want] == nil {
			t.Errorf("the catalog lacks %s", want)
		}
	}
	git, err := capability.CatalogBundle("git-toolkit", "")
	if err != nil || git.Manifest.Version != "1.0.0" || git.Manifest.Dependencies[0].Check != "git --version" {
		t.Fatalf("git-toolkit: %v %+v", err, git)
	}
	_, err = capability.CatalogBundle("git-toolkit", "9.9.9")
	if sbx.ErrorCode(err) != sbx.ENotFound || sbx.ErrorMessage(err) != "capability git-toolkit has no version 9.9.9 in the catalog (it has 1.0.0)" {
		t.Fatalf("unknown version: %v", err)
	}
	if _, err := capability.CatalogBundle("nope", ""); sbx.ErrorMessage(err) != "capability nope is not in the catalog" {
		t.Fatalf("unknown capability: %v", err)
	}
}

// catalogDir writes a catalog bundle to a directory, as materializing would.
func catalogDir(t *testing.T, name string) string {
	t.Helper()
	b, err := capability.CatalogBundle(name, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for p, f := range b.Files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, f.Data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func need(t *testing.T, commands ...string) {
	t.Helper()
	for _, c := range commands {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not installed here", c)
		}
	}
}

// git-toolkit's git-summary on a real repository.
func TestGitSummaryTool(t *testing.T) {
	need(t, "git")
	tool := filepath.Join(catalogDir(t, "git-toolkit"), "tools", "git-summary")
	repo := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=T", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	git("add", "a.txt")
	git("commit", "-q", "-m", "First commit")
	os.WriteFile(filepath.Join(repo, "b.txt"), []byte("b\n"), 0o644)
	out, err := exec.Command(tool, repo).CombinedOutput()
	for _, want := range []string{"branch:     main", "upstream:   none", "?? b.txt", "First commit"} {
		if err != nil || !strings.Contains(string(out), want) {
			t.Fatalf("git-summary (%v) does not say %q:\n%s", err, want, out)
		}
	}
	out, err = exec.Command(tool, t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "is not inside a git work tree") {
		t.Fatalf("git-summary outside a repository: %v\n%s", err, out)
	}
}

// http-toolkit's fetch tool and its MCP server, against a local server.
func TestHTTPToolkit(t *testing.T) {
	need(t, "bash", "curl", "jq")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/missing" {
			http.Error(w, "no such page", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"method": r.Method, "body": string(body), "team": r.Header.Get("X-Team")})
	}))
	defer srv.Close()
	dir := catalogDir(t, "http-toolkit")

	cmd := exec.Command(filepath.Join(dir, "tools", "fetch"), "-H", "X-Team: ml", "-d", "hello", "--json", srv.URL+"/api")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), `"method": "POST"`) || !strings.Contains(string(out), `"team": "ml"`) ||
		!strings.HasPrefix(stderr.String(), "HTTP 200 application/json") {
		t.Fatalf("fetch: %v\n%s\n%s", err, out, stderr.String())
	}
	err = exec.Command(filepath.Join(dir, "tools", "fetch"), srv.URL+"/missing").Run()
	if code := exitCode(err); code != 22 {
		t.Fatalf("fetch of a 404: exit %d (%v)", code, err)
	}

	mcp := exec.Command("bash", filepath.Join(dir, "mcp", "fetch-server.sh"))
	in, _ := mcp.StdinPipe()
	stdout, _ := mcp.StdoutPipe()
	mcp.Stderr = os.Stderr
	if err := mcp.Start(); err != nil {
		t.Fatal(err)
	}
	defer mcp.Process.Kill()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	rpc := func(msg string) map[string]any {
		t.Helper()
		io.WriteString(in, msg+"\n")
		if !lines.Scan() {
			t.Fatalf("no answer to %s: %v", msg, lines.Err())
		}
		var got map[string]any
		if err := json.Unmarshal(lines.Bytes(), &got); err != nil {
			t.Fatalf("answer to %s: %v: %s", msg, err, lines.Bytes())
		}
		return got
	}
	init := rpc(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r, _ := init["result"].(map[string]any); r["protocolVersion"] != "2025-03-26" || r["capabilities"] == nil {
		t.Fatalf("initialize: %v", init)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n") // no answer
	list := rpc(`{"jsonrpc":"2.0","id":"two","method":"tools/list"}`)
	if !strings.Contains(mustJSON(list), `"name":"fetch"`) || list["id"] != "two" {
		t.Fatalf("tools/list: %v", list)
	}
	call := rpc(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"` + srv.URL + `/x","method":"PUT","headers":{"X-Team":"ops"},"body":"b\"q"}}}`)
	text := mustJSON(call)
	if !strings.Contains(text, `HTTP 200 application/json`) || !strings.Contains(text, `\"method\":\"PUT\"`) ||
		!strings.Contains(text, `\"team\":\"ops\"`) || !strings.Contains(text, `\"body\":\"b\\\"q\"`) || !strings.Contains(text, `"isError":false`) {
		t.Fatalf("tools/call: %s", text)
	}
	if got := mustJSON(rpc(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"` + srv.URL + `/missing"}}}`)); !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "HTTP 404") {
		t.Fatalf("tools/call of a 404: %s", got)
	}
	if got := mustJSON(rpc(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"file:///etc/passwd"}}}`)); !strings.Contains(got, "is not an http:// or https:// URL") {
		t.Fatalf("tools/call of a file URL: %s", got)
	}
	if got := mustJSON(rpc(`{"jsonrpc":"2.0","id":6,"method":"resources/list"}`)); !strings.Contains(got, `"code":-32601`) {
		t.Fatalf("unknown method: %s", got)
	}
	if got := mustJSON(rpc(`not json`)); !strings.Contains(got, `"code":-32700`) {
		t.Fatalf("not JSON: %s", got)
	}
	in.Close()
	if err := mcp.Wait(); err != nil {
		t.Fatalf("the server did not end with its input: %v", err)
	}
}

func mustJSON(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
