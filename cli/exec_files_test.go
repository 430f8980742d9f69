package cli_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/agent"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/cli"
	"github.com/sbxdev/sbx/internal/testenv"
)

// exec, shell and files against the real agent, served in-process behind a
// stand-in for serve's proxy.

const agentSandbox = "sbx-agent1"

// newAgent serves an agent working in a temporary directory behind a proxy
// like serve's (API key checked, /api/v1/sandboxes/ID stripped, access token
// added), points the command line at it and answers the directory.
func newAgent(t *testing.T) string {
	t.Helper()
	const key, token = "sbx_cli_agent_key", "cli-agent-token-0123456789abcdef0123"
	dir := t.TempDir()
	a, err := agent.New(agent.Config{Token: token, Workdir: dir, Env: testenv.AgentEnv(t)})
	if err != nil {
		t.Fatal(err)
	}
	api := http.StripPrefix("/api/v1/sandboxes/"+agentSandbox, a.Handler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, `{"code":401,"type":"unauthorized","detail":"bad API key"}`, http.StatusUnauthorized)
			return
		}
		r.Header.Set(apiv1.AccessTokenHeader, token)
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	t.Setenv("SBX_URL", srv.URL)
	t.Setenv("SBX_API_KEY", key)
	return dir
}

// sbxIn runs the command line with stdin and returns its exit code, stdout
// and stderr.
func sbxIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Run(args, cli.Options{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut})
	return code, out.String(), errOut.String()
}

func TestExec(t *testing.T) {
	newAgent(t)
	code, out, errOut := sbxIn(t, "", "exec", "--env", "WHO=you", agentSandbox, "--", "sh", "-c", `echo out $WHO; echo err >&2; exit 4`)
	if code != 4 || out != "out you\n" || errOut != "err\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	input := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: many chunks
	code, out, errOut = sbxIn(t, input, "exec", agentSandbox, "sha256sum")
	if want := sha256hex(input); code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("exit %d, stdout %q (want %s), stderr %q", code, out, want, errOut)
	}

	code, _, errOut = sbxIn(t, "", "exec", agentSandbox, "sh", "-c", "kill -9 $$")
	if code != 128+9 {
		t.Errorf("killed by KILL: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = sbxIn(t, "", "exec", agentSandbox)
	if code != 2 || !strings.Contains(errOut, "takes ID and a command") {
		t.Errorf("no command: exit %d, stderr %q", code, errOut)
	}
}

func TestShell(t *testing.T) {
	newAgent(t)
	code, out, errOut := shellIn(t, "echo $((40+2))\nexit 5\n", "--cmd", "/bin/sh", agentSandbox)
	if code != 5 || !strings.Contains(out, "42") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// Without an exit, the ^D at the end of stdin ends the shell.
	code, out, errOut = shellIn(t, "echo $((6*7))\n", agentSandbox)
	if code != 0 || !strings.Contains(out, "42") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A last line without a newline is entered, in sh and in bash (whose
	// readline would take a ^D on it for "delete the next character").
	code, out, errOut = shellIn(t, "echo $((6*7))", "--cmd", "/bin/sh", agentSandbox)
	if code != 0 || !strings.Contains(out, "42") {
		t.Errorf("no newline: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = shellIn(t, "echo $((6*7))", agentSandbox)
	if code != 0 || !strings.Contains(out, "42") {
		t.Errorf("no newline, bash: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A nested shell ends as if a person typed ^D twice: the inner shell
	// (sh, reading cooked input) and then the login shell (bash, readline
	// raw), which exits with the status of its last command, the inner one.
	code, out, errOut = shellIn(t, "sh\n", agentSandbox)
	if code != 0 || strings.Contains(out, "not found") {
		t.Errorf("nested: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = shellIn(t, "sh\necho inner\nexit 3\n", agentSandbox)
	if code != 3 || !strings.Contains(out, "inner") {
		t.Errorf("nested exit 3: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// shellIn runs `sbx shell` with stdin and args like sbxIn, and fails the
// test if it has not exited after a generous 30 s: a guard, not a timing.
func shellIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := cli.Run(append([]string{"shell"}, args...), cli.Options{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut})
		done <- result{code, out.String(), errOut.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.errOut
	case <-time.After(30 * time.Second):
		t.Fatalf("sbx shell %q with stdin %q hung", args, stdin)
		return 0, "", ""
	}
}

func TestFiles(t *testing.T) {
	dir := newAgent(t)
	local := filepath.Join(t.TempDir(), "local.txt")
	if err := os.WriteFile(local, []byte("from a file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		stdin string
		args  []string
	}{
		{"", []string{"files", "put", agentSandbox, "docs/a.txt", local}},
		{"from stdin\n", []string{"files", "put", agentSandbox, "docs/b.txt"}},
		{"", []string{"files", "mkdir", agentSandbox, "docs/sub"}},
		{"", []string{"files", "mv", agentSandbox, "docs/b.txt", "docs/sub/b.txt"}},
	} {
		if code, out, errOut := sbxIn(t, run.stdin, run.args...); code != 0 || out != "" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", run.args, code, out, errOut)
		}
	}

	code, out, errOut := sbxIn(t, "", "files", "cat", agentSandbox, "docs/sub/b.txt")
	if code != 0 || out != "from stdin\n" {
		t.Errorf("cat: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	got := filepath.Join(t.TempDir(), "got.txt")
	if code, _, errOut := sbxIn(t, "", "files", "get", agentSandbox, dir+"/docs/a.txt", got); code != 0 {
		t.Errorf("get: exit %d, stderr %q", code, errOut)
	}
	if data, err := os.ReadFile(got); err != nil || string(data) != "from a file\n" {
		t.Errorf("got %q, %v", data, err)
	}

	code, out, _ = sbxIn(t, "", "files", "ls", "-d", "2", agentSandbox, "docs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "TYPE SIZE MODE MODIFIED PATH" ||
		!strings.HasPrefix(lines[1], "file") || !strings.HasSuffix(lines[1], dir+"/docs/a.txt") || !strings.HasSuffix(lines[3], "docs/sub/b.txt") {
		t.Errorf("ls: exit %d:\n%s", code, out)
	}
	code, out, _ = sbxIn(t, "", "--json", "files", "ls", agentSandbox, "docs")
	var list apiv1.EntryList
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Items) != 2 || list.Items[0].Size != 12 {
		t.Errorf("ls --json: exit %d, %v:\n%s", code, err, out)
	}

	if code, _, errOut := sbxIn(t, "", "files", "rm", agentSandbox, "docs"); code != 0 {
		t.Errorf("rm: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut = sbxIn(t, "", "files", "cat", agentSandbox, "docs/a.txt")
	if code != 1 || out != "" || !strings.Contains(errOut, "docs/a.txt") {
		t.Errorf("cat after rm: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// sha256hex is the hex SHA-256 of s, as sha256sum prints it.
func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
