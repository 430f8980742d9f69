package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/sbxdev/sbx/apiv1"
)

// Egress through a real serve and the CLI: a policy at create, shown in
// the detail, replaced live; then the operator's word: --deny-egress makes
// none the default and the only mode, --egress-modes lets more, and a
// default the modes refuse stops serve at start.
func TestEgressAPIAndCLI(t *testing.T) {
	s := startServer(t, serverOpts{})
	var sb apiv1.Sandbox
	if err := json.Unmarshal([]byte(s.ok("sandbox", "create", "base", "--wait", "--egress-allow", "Example.com,203.0.113.0/24", "--egress-deny", "203.0.113.9", "--json")), &sb); err != nil {
		t.Fatal(err)
	}
	if sb.Egress == nil || sb.Egress.Mode != "allow" || strings.Join(sb.Egress.Allow, ",") != "example.com,203.0.113.0/24" || strings.Join(sb.Egress.Deny, ",") != "203.0.113.9/32" {
		t.Fatalf("create --egress-allow: %+v", sb.Egress)
	}
	if got := s.ok("sandbox", "egress", sb.SandboxID); got != "allow example.com, 203.0.113.0/24; deny 203.0.113.9/32\n" {
		t.Errorf("sbx sandbox egress ID: %q", got)
	}
	if got := s.ok("sandbox", "get", sb.SandboxID); !strings.Contains(got, "allow example.com, 203.0.113.0/24; deny 203.0.113.9/32") {
		t.Errorf("sbx sandbox get lacks the policy:\n%s", got)
	}
	if got := s.ok("sandbox", "egress", sb.SandboxID, "none"); got != "none\n" {
		t.Errorf("sbx sandbox egress ID none: %q", got)
	}
	_, errOut, code := s.cli("sandbox", "egress", sb.SandboxID, "allow", "--allow", "10.0.0.0/8")
	if code != 1 || !strings.Contains(errOut, "allow[0]: 10.0.0.0/8 is within 10.0.0.0/8 (private), which sandboxes never reach") {
		t.Errorf("a private allow: exit %d, %s", code, errOut)
	}

	if out := s.ok("runtime", "set", "--egress-allow", "pypi.org", "--egress-deny", "203.0.113.9"); !strings.Contains(out, "allow pypi.org; deny 203.0.113.9/32") {
		t.Errorf("sbx runtime set --egress-allow:\n%s", out)
	}

	var got apiv1.Sandbox
	s.call("PUT", "/api/v1/sandboxes/"+sb.ID+"/egress", apiv1.Egress{Mode: "internet", Deny: []string{"bad.example"}}, http.StatusOK, &got)
	if got.Egress == nil || got.Egress.Mode != "internet" || got.Egress.Deny[0] != "bad.example" {
		t.Fatalf("PUT …/egress: %+v", got.Egress)
	}
	s.fail("PUT", "/api/v1/sandboxes/"+sb.ID+"/egress", map[string]any{"mode": "allow", "allow": []string{"2001:db8::1"}}, 400, `allow[0]: "2001:db8::1" is IPv6`)
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "network": map[string]any{"allowOut": []string{"example.com"}}}, 400, "not supported")

	s.restart(serverOpts{args: []string{"--deny-egress"}})
	if got := s.get(sb.ID); got.Egress == nil || got.Egress.Mode != "internet" || got.Egress.Deny[0] != "bad.example" {
		t.Errorf("after a restart the sandbox's policy is %+v", got.Egress)
	}
	locked := s.create(map[string]any{"waitReady": true})
	if locked.Egress == nil || locked.Egress.Mode != "none" {
		t.Errorf("with --deny-egress a create that names none got %+v", locked.Egress)
	}
	s.fail("POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "egress": map[string]any{"mode": "internet"}}, 403,
		"egress mode internet (asked for) is not allowed on this server: its operator allows only none (serve --egress-modes)")
	s.fail("PUT", "/api/v1/sandboxes/"+locked.ID+"/egress", map[string]any{"mode": "allow", "allow": []string{"example.com"}}, 403, "not allowed on this server")

	s.restart(serverOpts{args: []string{"--deny-egress", "--egress-modes", "none,allow"}})
	s.call("PUT", "/api/v1/sandboxes/"+locked.ID+"/egress", apiv1.Egress{Mode: "allow", Allow: []string{"example.com"}}, http.StatusOK, &got)

	s.stop(syscall.SIGTERM)
	out, err := exec.Command(sbxBin, "serve", "--data-dir", s.dataDir, "--listen", freeAddr(t), "--provider", "memory", "--egress-modes", "none").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--egress-modes does not allow the default egress policy, internet") {
		t.Errorf("serve with a default its modes refuse: %v\n%s", err, out)
	}
}
