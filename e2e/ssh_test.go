package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"golang.org/x/crypto/ssh"
)

// newPublicKey makes a key pair and answers its public half as a .pub
// file's line.
func newPublicKey(t *testing.T, comment string) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " " + comment + "\n"
}

// SSH keys and tokens through the API and the CLI: registered to a
// project, listed, refused where they must be, removed; a sandbox's token
// minted with the gateway's address and host key, for whoever reaches the
// sandbox only.
func TestSSHKeysAndTokensAPI(t *testing.T) {
	s := startServer(t, serverOpts{})
	var me apiv1.Me
	s.call("GET", "/api/v1/me", nil, http.StatusOK, &me)
	var other apiv1.CreatedOrg
	s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "other", "kyc_status": "verified", "credits": "100"}, http.StatusCreated, &other)

	laptop := newPublicKey(t, "ada@laptop")
	var k apiv1.SSHKey
	s.call("POST", "/api/v1/org/default/ssh-keys", apiv1.AddSSHKeyRequest{PublicKey: laptop, ProjectID: me.Project.ID}, http.StatusCreated, &k)
	if k.Name != "ada@laptop" || k.Scope != "project" || k.ProjectID != me.Project.ID || !strings.HasPrefix(k.Fingerprint, "SHA256:") ||
		k.Type != "ssh-ed25519" || !strings.HasPrefix(laptop, k.PublicKey) {
		t.Fatalf("registered: %+v", k)
	}
	s.fail("POST", "/api/v1/org/default/ssh-keys", apiv1.AddSSHKeyRequest{PublicKey: laptop, ProjectID: me.Project.ID}, http.StatusConflict, "registered in the org already")
	s.fail("POST", "/api/v1/org/default/ssh-keys", apiv1.AddSSHKeyRequest{PublicKey: newPublicKey(t, "x")}, http.StatusBadRequest, "an org-wide API key acts for no member")
	s.fail("POST", "/api/v1/org/default/ssh-keys", apiv1.AddSSHKeyRequest{PublicKey: "ssh-rsa AAAA", ProjectID: me.Project.ID}, http.StatusBadRequest, "not a public key")
	s.fail("POST", "/api/v1/org/default/ssh-keys", map[string]any{"public_key": laptop, "fingerprint": "x"}, http.StatusBadRequest, `unknown field "fingerprint"`)
	s.fail("POST", "/api/v1/org/default/ssh-keys", apiv1.AddSSHKeyRequest{PublicKey: newPublicKey(t, "x"), ProjectID: other.Project.ID}, http.StatusNotFound, "not found")
	s.failKey(other.Secret, "GET", "/api/v1/org/default/ssh-keys", nil, http.StatusNotFound, "org default not found")
	s.failKey(other.Secret, "DELETE", "/api/v1/org/default/ssh-keys/"+k.ID, nil, http.StatusNotFound, "org default not found")
	s.failKey(other.Secret, "DELETE", "/api/v1/org/other/ssh-keys/"+k.ID, nil, http.StatusNotFound, "SSH key "+k.ID+" not found")
	var otherKey apiv1.SSHKey
	s.callKey(other.Secret, "POST", "/api/v1/org/other/ssh-keys", apiv1.AddSSHKeyRequest{PublicKey: laptop, ProjectID: other.Project.ID}, http.StatusCreated, &otherKey)
	var list apiv1.SSHKeyList
	s.call("GET", "/api/v1/org/default/ssh-keys?limit=10", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != k.ID {
		t.Fatalf("listed: %+v", list)
	}

	// The CLI: a .pub file, a project by name; a private key refused.
	dir := t.TempDir()
	pubFile, privFile := filepath.Join(dir, "ci.pub"), filepath.Join(dir, "ci")
	os.WriteFile(pubFile, []byte(newPublicKey(t, "ci@runner")), 0o600)
	os.WriteFile(privFile, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nxxx\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600)
	var added apiv1.SSHKey
	if err := json.Unmarshal([]byte(s.ok("ssh-key", "add", "--project", me.Project.Name, pubFile, "--json")), &added); err != nil || added.ProjectID != me.Project.ID || added.Name != "ci@runner" {
		t.Fatalf("sbx ssh-key add: %+v %v", added, err)
	}
	if _, errOut, code := s.cli("ssh-key", "add", "--project", me.Project.Name, privFile); code != 1 || !strings.Contains(errOut, "is a private key") {
		t.Errorf("a private key: %d %q", code, errOut)
	}
	if out := s.ok("ssh-key", "list"); !strings.Contains(out, added.Fingerprint) || !strings.Contains(out, k.Fingerprint) {
		t.Errorf("sbx ssh-key list:\n%s", out)
	}
	if out := s.ok("ssh-key", "rm", added.Fingerprint); !strings.Contains(out, "removed SSH key "+added.ID) {
		t.Errorf("sbx ssh-key rm: %s", out)
	}
	var gone apiv1.SSHKey
	s.call("DELETE", "/api/v1/org/default/ssh-keys/"+k.ID, nil, http.StatusOK, &gone)
	s.fail("DELETE", "/api/v1/org/default/ssh-keys/"+k.ID, nil, http.StatusNotFound, "not found")

	// A sandbox's token: for whoever reaches it.
	sb := s.create(map[string]any{"waitReady": true})
	var access apiv1.SSHAccess
	before := time.Now()
	s.call("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/ssh", apiv1.SSHAccessRequest{ExpiresIn: ptr(int64(60))}, http.StatusCreated, &access)
	_, sshPort, _ := strings.Cut(s.sshAddr, ":")
	if access.User != sb.SandboxID || access.Host != "127.0.0.1" || access.Port == 0 || !strings.HasPrefix(access.Token, "sbxssh_") ||
		access.ExpiresAt.Before(before.Add(59*time.Second)) || access.ExpiresAt.After(time.Now().Add(61*time.Second)) ||
		!strings.HasPrefix(access.KnownHosts, "[127.0.0.1]:"+sshPort+" ssh-ed25519 ") || access.Command != "ssh -p "+sshPort+" "+sb.SandboxID+"@127.0.0.1" {
		t.Fatalf("access: %+v", access)
	}
	s.call("POST", "/api/v1/sandboxes/"+sb.ID+"/ssh", nil, http.StatusCreated, &access)
	s.fail("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/ssh", apiv1.SSHAccessRequest{ExpiresIn: ptr(int64(7200))}, http.StatusBadRequest, "expires_in must be at most 3600 seconds")
	s.fail("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/ssh", apiv1.SSHAccessRequest{ExpiresIn: ptr(int64(1))}, http.StatusBadRequest, "expires_in must be from 5 to 3600 seconds")
	s.failKey(other.Secret, "POST", "/api/v1/sandboxes/"+sb.SandboxID+"/ssh", nil, http.StatusNotFound, "not found")
	s.fail("POST", "/api/v1/sandboxes/nosuchsandbox/ssh", nil, http.StatusNotFound, "not found")
	out := s.ok("sandbox", "ssh", "--print", "--expires", "1m", sb.SandboxID)
	for _, want := range []string{"sbxssh_", "ssh -p " + sshPort + " " + sb.SandboxID + "@127.0.0.1", "[127.0.0.1]:" + sshPort + " ssh-ed25519"} {
		if !strings.Contains(out, want) {
			t.Errorf("sbx sandbox ssh --print: no %q in\n%s", want, out)
		}
	}
	s.call("DELETE", "/api/v1/sandboxes/"+sb.SandboxID, nil, http.StatusOK, nil)
	s.fail("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/ssh", nil, http.StatusConflict, "is killed")

	// A server without a gateway says so.
	s.restart(serverOpts{args: []string{"--ssh-listen", "off"}})
	sb = s.create(map[string]any{"waitReady": true})
	s.fail("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/ssh", nil, http.StatusServiceUnavailable, "runs no SSH gateway")
}

func ptr[T any](v T) *T { return &v }
