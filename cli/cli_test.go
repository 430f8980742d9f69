package cli_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/cli"
)

// seen is one request the fake API saw.
type seen struct {
	Method, Path, Query, Auth string
	Body                      map[string]any
}

// api is a fake sbx API: canned answers keyed by "METHOD /path?query" or,
// failing that, "METHOD /path"; anything else is a 404 envelope.
type api struct {
	mu      sync.Mutex
	answers map[string]answer
	seen    []seen
}

type answer struct {
	status int
	body   string
}

// newAPI starts a fake API and points the command line at it with a key.
func newAPI(t *testing.T, answers map[string]answer) *api {
	t.Helper()
	a := &api{answers: answers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		s := seen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization")}
		if len(data) > 0 {
			json.Unmarshal(data, &s.Body)
		}
		a.mu.Lock()
		a.seen = append(a.seen, s)
		ans, ok := a.answers[r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery]
		if !ok {
			ans, ok = a.answers[r.Method+" "+r.URL.Path]
		}
		a.mu.Unlock()
		if !ok {
			ans = answer{404, `{"code":404,"type":"not_found","detail":"no route in the fake","errors":[]}`}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ans.status)
		io.WriteString(w, ans.body)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("SBX_URL", srv.URL)
	t.Setenv("SBX_API_KEY", "sbx_cli_key")
	return a
}

// requests returns what the fake saw.
func (a *api) requests() []seen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]seen(nil), a.seen...)
}

// sbx runs the command line and returns its exit code, stdout and stderr.
func sbx(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(args, cli.Options{Stdout: &out, Stderr: &errOut})
	return code, out.String(), errOut.String()
}

const (
	running = `{"sandboxID":"sbx-run1","id":"uuid-1","provider":"memory","kind":"task","templateID":"base","state":"running",
		"createdAt":"2025-01-02T03:04:05Z","expiresAt":"2025-01-02T04:04:05Z","timeout":3600,"cpu":2,"memoryMB":512,
		"envVarNames":["FOO"],"metadata":{"purpose":"demo"},"billed_credits":"0.000000","running_credits":"0.000000",
		"estimated_total_credits":"0.000000","runtimeURL":"http://49983-sbx-run1.sbx.localhost:7070","accessToken":"tok-123",
		"diagnostic":"slow image pull","timeline":[{"at":"2025-01-02T03:04:05Z","step":"created","detail":"on memory"}]}`
	paused = `{"sandboxID":"sbx-pau2","id":"uuid-2","provider":"memory","kind":"runtime","templateID":"code-interpreter",
		"state":"paused","pause_reason":"user","createdAt":"2025-01-01T00:00:00Z","timeout":60}`
)

func TestListTable(t *testing.T) {
	a := newAPI(t, map[string]answer{
		"GET /api/v1/sandboxes": {200, `{"items":[` + running + `,` + paused + `],"next_cursor":"n2"}`},
	})
	code, out, errOut := sbx(t, "sandbox", "list", "--state", "running", "--state", "paused", "--limit", "2", "--metadata", "purpose=demo")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and 2 rows:\n%s", out)
	}
	for i, want := range [][]string{
		{"SANDBOX ID", "STATE", "TEMPLATE", "KIND", "PROVIDER", "CREATED", "EXPIRES/ENDED", "PAUSE/END REASON"},
		{"sbx-run1", "running", "base", "task", "memory", "2025-01-02T03:04:05Z", "2025-01-02T04:04:05Z", "-"},
		{"sbx-pau2", "paused", "code-interpreter", "runtime", "memory", "2025-01-01T00:00:00Z", "-", "user"},
	} {
		if strings.Join(strings.Fields(lines[i]), " ") != strings.Join(want, " ") {
			t.Errorf("line %d = %q, want %q", i, lines[i], want)
		}
	}
	if !strings.Contains(errOut, "--cursor n2") {
		t.Errorf("no next-page hint on stderr: %q", errOut)
	}
	req := a.requests()[0]
	if req.Auth != "Bearer sbx_cli_key" || req.Query != "limit=2&metadata=purpose%3Ddemo&state=running&state=paused" {
		t.Errorf("request = %+v", req)
	}
}

func TestListAllJSON(t *testing.T) {
	a := newAPI(t, map[string]answer{
		"GET /api/v1/sandboxes?":          {200, `{"items":[` + running + `],"next_cursor":"p2"}`},
		"GET /api/v1/sandboxes?cursor=p2": {200, `{"items":[` + paused + `]}`},
	})
	code, out, errOut := sbx(t, "--json", "sandbox", "list", "--all")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var list apiv1.SandboxList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("stdout is not a sandbox list: %v\n%s", err, out)
	}
	if len(list.Items) != 2 || list.Items[1].SandboxID != "sbx-pau2" || list.NextCursor != "" || errOut != "" {
		t.Errorf("list = %+v, stderr %q", list, errOut)
	}
	if n := len(a.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestListProjectUsesOrgView(t *testing.T) {
	a := newAPI(t, map[string]answer{
		"GET /api/v1/me":                  {200, `{"org":{"id":"org-1","name":"default"}}`},
		"GET /api/v1/org/org-1/sandboxes": {200, `{"items":[` + paused + `]}`},
	})
	code, out, errOut := sbx(t, "sandbox", "list", "--project-id", "p-9", "--state", "paused")
	if code != 0 || !strings.Contains(out, "sbx-pau2") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if got := a.requests()[1]; got.Path != "/api/v1/org/org-1/sandboxes" || got.Query != "project_id=p-9&state=paused" {
		t.Errorf("request = %+v", got)
	}

	code, _, errOut = sbx(t, "sandbox", "list", "--project-id", "p-9", "--template", "base")
	if code != 2 || !strings.Contains(errOut, "--project-id") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestGet(t *testing.T) {
	newAPI(t, map[string]answer{"GET /api/v1/sandboxes/sbx-run1": {200, running}})
	code, out, errOut := sbx(t, "sandbox", "get", "sbx-run1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Sandbox ID:", "sbx-run1", "uuid-1", "1h0m0s (3600s)", "purpose=demo",
		"Diagnostic:", "slow image pull", "Timeline:", "created", "on memory", "tok-123"} {
		if !strings.Contains(out, want) {
			t.Errorf("get output lacks %q:\n%s", want, out)
		}
	}

	code, out, _ = sbx(t, "--json", "sandbox", "get", "sbx-run1")
	var got, want apiv1.Sandbox
	json.Unmarshal([]byte(running), &want)
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("--json get = %v %+v, want %+v", err, got, want)
	}
	if !strings.Contains(out, "\n  \"sandboxID\": \"sbx-run1\"") {
		t.Errorf("--json is not indented:\n%s", out)
	}
}

func TestCreate(t *testing.T) {
	a := newAPI(t, map[string]answer{"POST /api/v1/sandboxes": {201, running}})
	code, out, errOut := sbx(t, "sandbox", "create", "base", "--timeout", "30m", "--wait", "--env", "FOO=bar",
		"--metadata", "purpose=demo", "--auto-pause", "--cpu", "1.5", "--memory-mb", "1024", "--disk-mb", "2048", "--gpu", "h100:1:50", "--kind", "runtime")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if first, _, _ := strings.Cut(out, "\n"); first != "sbx-run1" {
		t.Errorf("first line = %q, want the sandbox ID", first)
	}
	want := map[string]any{"templateID": "base", "timeout": 1800.0, "waitReady": true, "envVars": map[string]any{"FOO": "bar"},
		"metadata": map[string]any{"purpose": "demo"}, "autoPause": true, "cpu": 1.5, "memoryMB": 1024.0, "diskMB": 2048.0,
		"gpu": map[string]any{"type": "h100", "count": 1.0, "fraction": 50.0}, "kind": "runtime"}
	if got := a.requests()[0].Body; !reflect.DeepEqual(got, want) {
		t.Errorf("body = %v\nwant %v", got, want)
	}

	for _, bad := range [][]string{{"--gpu", "h100:x"}, {"--env", "NOEQUALS"}, {"--timeout", "soon"}} {
		code, _, errOut := sbx(t, append([]string{"sandbox", "create", "base"}, bad...)...)
		if code != 2 || !strings.HasPrefix(errOut, "sbx: ") {
			t.Errorf("create %v: exit %d, stderr %q; want a usage error", bad, code, errOut)
		}
	}
	if n := len(a.requests()); n != 1 {
		t.Errorf("bad flags reached the server: %d requests", n)
	}
}

func TestDeleteNeedsYes(t *testing.T) {
	a := newAPI(t, map[string]answer{"DELETE /api/v1/sandboxes/sbx-run1": {200, `{"sandboxID":"sbx-run1","state":"killed","end_reason":"user","endedAt":"2025-01-02T03:05:00Z"}`}})
	code, out, errOut := sbx(t, "sandbox", "delete", "sbx-run1")
	if code != 2 || out != "" || !strings.Contains(errOut, "--yes") {
		t.Errorf("without --yes: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if n := len(a.requests()); n != 0 {
		t.Fatalf("delete without --yes called the server %d times", n)
	}
	code, out, errOut = sbx(t, "sandbox", "delete", "sbx-run1", "--yes")
	if code != 0 || out != "sbx-run1 killed (user), ended 2025-01-02T03:05:00Z\n" {
		t.Errorf("with --yes: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if r := a.requests(); len(r) != 1 || r[0].Method != "DELETE" {
		t.Errorf("requests = %+v", r)
	}
}

func TestAPIErrors(t *testing.T) {
	newAPI(t, map[string]answer{
		"POST /api/v1/sandboxes/sbx-k/pause":     {409, `{"code":409,"type":"conflict","detail":"cannot pause sandbox sbx-k: it is killed","errors":[]}`},
		"POST /api/v1/sandboxes/sbx-k/refreshes": {400, `{"code":400,"type":"invalid","detail":"duration must be at most 3600 seconds","errors":[{"field":"duration","message":"duration must be at most 3600 seconds"}]}`},
	})
	code, out, errOut := sbx(t, "sandbox", "pause", "sbx-k")
	if code != 1 || out != "" || errOut != "sbx: cannot pause sandbox sbx-k: it is killed\n" {
		t.Errorf("409: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = sbx(t, "sandbox", "refresh", "sbx-k", "--duration", "2h")
	if code != 1 || errOut != "sbx: duration must be at most 3600 seconds\n  duration: duration must be at most 3600 seconds\n" {
		t.Errorf("400: exit %d, stderr %q", code, errOut)
	}
}

func TestActions(t *testing.T) {
	a := newAPI(t, map[string]answer{
		"POST /api/v1/sandboxes/sbx-run1/timeout":   {200, running},
		"POST /api/v1/sandboxes/sbx-run1/resume":    {200, running},
		"POST /api/v1/sandboxes/sbx-run1/refreshes": {200, running},
		"POST /api/v1/sandboxes/sbx-run1/connect":   {200, running},
		"POST /api/v1/sandboxes/sbx-pau2/pause":     {200, paused},
	})
	for _, c := range []struct {
		args []string
		body map[string]any
		out  string
	}{
		{[]string{"timeout", "sbx-run1", "300"}, map[string]any{"timeout": 300.0}, "sbx-run1 running, expires 2025-01-02T04:04:05Z\n"},
		{[]string{"timeout", "sbx-run1", "5m"}, map[string]any{"timeout": 300.0}, ""},
		{[]string{"resume", "sbx-run1"}, map[string]any{}, ""},
		{[]string{"resume", "sbx-run1", "--timeout", "1h"}, map[string]any{"timeout": 3600.0}, ""},
		{[]string{"refresh", "sbx-run1"}, map[string]any{}, ""},
		{[]string{"refresh", "sbx-run1", "--duration", "600"}, map[string]any{"duration": 600.0}, ""},
		{[]string{"pause", "sbx-pau2"}, map[string]any{}, "sbx-pau2 paused (user)\n"},
		{[]string{"connect", "sbx-run1", "--timeout", "90"}, map[string]any{"timeout": 90.0}, ""},
	} {
		code, out, errOut := sbx(t, append([]string{"sandbox"}, c.args...)...)
		if code != 0 || (c.out != "" && out != c.out) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
		}
		r := a.requests()
		if got := r[len(r)-1]; got.Method != "POST" || !reflect.DeepEqual(got.Body, c.body) {
			t.Errorf("%v: request %+v, want body %v", c.args, got, c.body)
		}
	}
	_, out, _ := sbx(t, "sandbox", "connect", "sbx-run1")
	if !strings.Contains(out, "http://49983-sbx-run1.sbx.localhost:7070") || !strings.Contains(out, "tok-123") {
		t.Errorf("connect does not print the runtime URL and token:\n%s", out)
	}

	n := len(a.requests())
	for _, bad := range [][]string{{"timeout", "sbx-run1", "soon"}, {"timeout", "sbx-run1"}, {"pause"}, {"get", "a", "b"}, {"frobnicate"}} {
		code, _, errOut := sbx(t, append([]string{"sandbox"}, bad...)...)
		if code != 2 || !strings.HasPrefix(errOut, "sbx: ") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", bad, code, errOut)
		}
	}
	if len(a.requests()) != n {
		t.Errorf("usage errors reached the server")
	}
}

func TestLogsAndUsage(t *testing.T) {
	a := newAPI(t, map[string]answer{
		"GET /api/v1/sandboxes/sbx-run1/logs": {200, `{"items":[{"at":"2025-01-02T03:04:06Z","source":"stdout","line":"hello\tworld"}],"next_cursor":"l2"}`},
		"GET /api/v1/me":                      {200, `{"org":{"id":"org-1","name":"default"}}`},
		"GET /api/v1/org/org-1/sandboxes/usage": {200, `{"org":{"id":"org-1","name":"default"},
			"total":{"sandboxes":3,"by_state":{"running":1,"killed":2},"running_vcpu":2,"running_memory_mb":512,"lifetime_seconds":4000,"billed_credits":"1.500000"},
			"projects":[{"project":{"id":"p-1","name":"default"},"usage":{"sandboxes":3,"by_state":{"running":1,"killed":2},"running_vcpu":2,"running_memory_mb":512,"lifetime_seconds":4000,"billed_credits":"1.500000"}}]}`},
	})
	code, out, errOut := sbx(t, "sandbox", "logs", "sbx-run1", "--limit", "1")
	if code != 0 || out != "2025-01-02T03:04:06Z stdout hello\tworld\n" || !strings.Contains(errOut, "--cursor l2") {
		t.Errorf("logs: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := a.requests()[0].Query; got != "limit=1" {
		t.Errorf("logs query = %q", got)
	}

	code, out, errOut = sbx(t, "sandbox", "usage")
	if code != 0 {
		t.Fatalf("usage: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "PROJECT") ||
		strings.Join(strings.Fields(lines[2]), " ") != "TOTAL 3 0 1 0 2 0 2 512 1h6m40s 1.500000" {
		t.Errorf("usage table:\n%s", out)
	}
}

func TestKeyFromDataDir(t *testing.T) {
	a := newAPI(t, map[string]answer{"GET /api/v1/sandboxes/sbx-run1": {200, running}})
	dir := t.TempDir()
	t.Setenv("SBX_API_KEY", "")
	t.Setenv("SBX_DATA_DIR", dir)
	if err := os.WriteFile(filepath.Join(dir, "admin.key"), []byte("sbx_from_file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := sbx(t, "sandbox", "get", "sbx-run1"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := a.requests()[0].Auth; got != "Bearer sbx_from_file" {
		t.Errorf("Authorization = %q, want the key file's", got)
	}

	empty := t.TempDir()
	t.Setenv("SBX_DATA_DIR", empty)
	code, _, errOut := sbx(t, "sandbox", "get", "sbx-run1")
	if code != 1 || !strings.Contains(errOut, filepath.Join(empty, "admin.key")) || !strings.Contains(errOut, "SBX_API_KEY") {
		t.Errorf("no key: exit %d, stderr %q", code, errOut)
	}
	if n := len(a.requests()); n != 1 {
		t.Errorf("a request went out without a key")
	}
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	t.Setenv("SBX_API_KEY", "k")
	code, _, errOut := sbx(t, "--url", srv.URL, "sandbox", "list")
	if code != 1 || !strings.Contains(errOut, "cannot reach the sbx API at "+srv.URL) {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
