package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// cli runs the real sbx binary against s and returns stdout, stderr and the exit code.
func (s *server) cli(args ...string) (string, string, int) {
	s.t.Helper()
	cmd := exec.Command(sbxBin, args...)
	cmd.Env = append(os.Environ(), "SBX_URL="+s.url, "SBX_DATA_DIR="+s.dataDir, "SBX_API_KEY=")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		s.t.Fatalf("sbx %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// ok runs a CLI command that must succeed and returns its stdout.
func (s *server) ok(args ...string) string {
	s.t.Helper()
	out, errOut, code := s.cli(args...)
	if code != 0 {
		s.t.Fatalf("sbx %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func TestCLI(t *testing.T) {
	s := startServer(t, serverOpts{})
	var sb apiv1.Sandbox
	if err := json.Unmarshal([]byte(s.ok("sandbox", "create", "base", "--wait", "--timeout", "30m", "--env", "A=1", "--metadata", "team=core", "--json")), &sb); err != nil {
		t.Fatal(err)
	}
	if sb.State != "running" || sb.Timeout != 1800 || sb.Metadata["team"] != "core" || sb.EnvVarNames[0] != "A" {
		t.Fatalf("create --json: %+v", sb)
	}
	id := sb.SandboxID
	other := strings.SplitN(s.ok("sandbox", "create", "code-interpreter"), "\n", 2)[0]
	if !strings.HasPrefix(other, "i") || len(other) != 20 {
		t.Fatalf("create prints the ID first, got %q", other)
	}

	table := s.ok("sandbox", "list")
	if !strings.Contains(table, "SANDBOX ID") || !strings.Contains(table, id) || !strings.Contains(table, other) {
		t.Fatalf("list table:\n%s", table)
	}
	s.ok("sandbox", "pause", id)
	paused := s.ok("sandbox", "list", "--state", "paused", "--state", "killed")
	if !strings.Contains(paused, id) || strings.Contains(paused, other) {
		t.Fatalf("list --state paused --state killed:\n%s", paused)
	}
	var me apiv1.Me
	s.call("GET", "/api/v1/me", nil, 200, &me)
	byProject := s.ok("sandbox", "list", "--project-id", me.Project.ID, "--json")
	if !strings.Contains(byProject, id) {
		t.Fatalf("list --project-id:\n%s", byProject)
	}
	if got := s.ok("sandbox", "get", id); !strings.Contains(got, "paused") || !strings.Contains(got, "pausing") {
		t.Fatalf("get shows state and timeline:\n%s", got)
	}
	s.ok("sandbox", "resume", id, "--timeout", "10m")
	if got := s.ok("sandbox", "connect", id); !strings.Contains(got, "49983-"+id) {
		t.Fatalf("connect prints the runtime URL:\n%s", got)
	}
	s.ok("sandbox", "refresh", id, "--duration", "600")
	s.ok("sandbox", "timeout", id, "5m")
	if got := s.get(id); got.Timeout != 300 || got.State != "running" {
		t.Fatalf("after timeout 5m: %d %s", got.Timeout, got.State)
	}
	if logs := s.ok("sandbox", "logs", id, "--all"); !strings.Contains(logs, "booted template base") || !strings.Contains(logs, "timeout_set") {
		t.Fatalf("logs:\n%s", logs)
	}
	if usage := s.ok("sandbox", "usage"); !strings.Contains(usage, "default") {
		t.Fatalf("usage:\n%s", usage)
	}

	// Refusals: clear words, non-zero codes, nothing changed.
	if _, errOut, code := s.cli("sandbox", "delete", id); code != 2 || !strings.Contains(errOut, "--yes") {
		t.Fatalf("delete without --yes: exit %d, %s", code, errOut)
	}
	if _, errOut, code := s.cli("sandbox", "resume", id); code != 1 || !strings.Contains(errOut, "sbx: cannot resume sandbox "+id+": it is running") {
		t.Fatalf("resume a running sandbox: exit %d, %s", code, errOut)
	}
	if _, errOut, code := s.cli("sandbox", "get", "inope"); code != 1 || !strings.Contains(errOut, "sandbox inope not found") {
		t.Fatalf("get unknown: exit %d, %s", code, errOut)
	}
	if _, _, code := s.cli("sandbox", "get"); code != 2 {
		t.Fatalf("get without an ID: exit %d", code)
	}
	if got := s.get(id); got.State != "running" {
		t.Fatalf("refused commands changed the sandbox: %s", got.State)
	}
	s.ok("sandbox", "delete", id, "--yes")
	if got := s.get(id); got.State != "killed" {
		t.Fatalf("after delete --yes: %s", got.State)
	}
}

// The preview verbs: create's preview flags, `sbx sandbox url` making,
// listing and revoking links, and get showing the previews.
func TestCLIPreviews(t *testing.T) {
	s := startServer(t, serverOpts{})
	var sb apiv1.Sandbox
	if err := json.Unmarshal([]byte(s.ok("sandbox", "create", "base", "--wait", "--preview", "public", "--preview-host", "localhost", "--no-wake", "--port", "8080", "--json")), &sb); err != nil {
		t.Fatal(err)
	}
	if sb.Preview.Access != "public" || sb.Preview.Host != "localhost" || *sb.Preview.Wake || len(sb.Ports) != 1 || sb.Ports[0].Port != 8080 {
		t.Fatalf("create's preview flags: %+v %+v", sb.Preview, sb.Ports)
	}
	detail := s.ok("sandbox", "get", sb.SandboxID)
	for _, want := range []string{"public, host localhost, traffic does not wake it", "8080 http://8080-" + sb.SandboxID, "Traffic token"} {
		if !strings.Contains(detail, want) {
			t.Errorf("get lacks %q:\n%s", want, detail)
		}
	}
	link := strings.TrimSpace(s.ok("sandbox", "url", sb.SandboxID, "8080", "--expires", "2h"))
	if !strings.HasPrefix(link, "http://8080-"+sb.SandboxID+".sbx.localhost:") || !strings.Contains(link, "/?sbx_token=sbl_") {
		t.Fatalf("url printed %q", link)
	}
	var links apiv1.PreviewLinkList
	if err := json.Unmarshal([]byte(s.ok("sandbox", "url", sb.SandboxID, "--list", "--json")), &links); err != nil || len(links.Items) != 1 {
		t.Fatalf("--list: %+v %v", links, err)
	}
	if out := s.ok("sandbox", "url", sb.SandboxID, "--revoke", links.Items[0].ID); !strings.Contains(out, links.Items[0].ID) {
		t.Errorf("--revoke printed %q", out)
	}
	if got := s.get(sb.ID); len(got.Ports) != 1 {
		t.Errorf("ports: %+v", got.Ports)
	}
	for _, bad := range [][]string{{"sandbox", "url", sb.SandboxID}, {"sandbox", "url", sb.SandboxID, "http"}, {"sandbox", "url", sb.SandboxID, "8080", "--list"}} {
		if _, errOut, code := s.cli(bad...); code != 2 {
			t.Errorf("sbx %s: exit %d, want 2 (usage): %s", strings.Join(bad, " "), code, errOut)
		}
	}
	if _, errOut, code := s.cli("sandbox", "url", sb.SandboxID, "22"); code == 0 || !strings.Contains(errOut, "never reached through a preview") {
		t.Errorf("a link to port 22: exit %d %s", code, errOut)
	}
}
