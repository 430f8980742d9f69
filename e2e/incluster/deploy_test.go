package incluster

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/internal/k8stest"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
	"golang.org/x/crypto/ssh"
)

// The namespaces deploy/kubernetes makes, and what its Deployment's pods
// are labelled with.
const (
	serveNS    = "sbx"
	sandboxNS  = "sbx-sandboxes"
	serveLabel = "app.kubernetes.io/name=sbx"
)

// leadsLine is what serve logs when it takes the ledger's leader lock and
// starts the meter and the reaper (server.Run).
const leadsLine = "running the meter, the reaper"

// testOverlay is deploy/kubernetes on the test cluster: images tagged e2e,
// pulled never.
const testOverlay = "testdata/overlay"

// deployment is sbx as deploy/kubernetes runs it, through overlay, on the
// test cluster.
type deployment struct {
	key string // an org-wide key of the org "default", made by the CLI in the first replica
	// base is the base template's image: the template ID a create names,
	// since serve's templates directory in its pod (an emptyDir) holds no
	// template.
	base string
}

// deploy builds the sbx binary, makes its images and the base template's
// (imported into the cluster), makes the Secret sbx (a database of its own,
// a seal key and an SSH host key), applies overlay (a directory of
// kustomization.yaml over testOverlay, or it) and waits for both replicas
// to be ready and to present that host key; the namespaces are deleted when
// t ends.
func deploy(t *testing.T, overlay string) *deployment {
	t.Helper()
	k8stest.Cluster(t)
	bin := buildSbx(t)
	base := importImages(t, bin)
	dsn := k8stest.PodPostgres(t)
	// As docs/KUBERNETES.md has an operator do it: the namespace and the
	// Secret, then the rest.
	kubectl(t, "create", "namespace", serveNS)
	t.Cleanup(func() {
		if t.Failed() {
			dump(t)
		}
		if _, err := k8stest.Kubectl(t, "", "delete", "-k", overlay, "--ignore-not-found", "--wait", "--timeout=3m"); err != nil {
			t.Errorf("deleting the deployment: %v", err)
		}
	})
	dir := t.TempDir()
	seal, hostKeyFile := filepath.Join(dir, "seal.key"), filepath.Join(dir, "ssh_host_ed25519_key")
	hostKey := newHostKey(t, hostKeyFile)
	if err := os.WriteFile(seal, []byte(rand.Text()[:32]), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "-n", serveNS, "create", "secret", "generic", "sbx", "--from-literal=database-url="+dsn,
		"--from-file=seal.key="+seal, "--from-file=ssh_host_ed25519_key="+hostKeyFile)
	kubectl(t, "apply", "-k", overlay)
	kubectl(t, "-n", serveNS, "rollout", "status", "deploy/sbx", "--timeout=5m")
	for _, p := range servePods(t) {
		if got := gatewayKey(t, p); !bytes.Equal(got.Marshal(), hostKey.Marshal()) {
			t.Fatalf("%s's SSH gateway presents %s, not the Secret's %s", p.Name, ssh.FingerprintSHA256(got), ssh.FingerprintSHA256(hostKey))
		}
	}
	return &deployment{key: adminKey(t), base: base}
}

// newHostKey writes an SSH host key to path, as ssh-keygen would, and
// answers its public half.
func newHostKey(t *testing.T, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "sbx ssh gateway")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// gatewayKey is the host key p's SSH gateway presents (the handshake goes
// no further: no credentials are offered).
func gatewayKey(t *testing.T, p pod) ssh.PublicKey {
	t.Helper()
	var got ssh.PublicKey
	cfg := &ssh.ClientConfig{User: "nobody", Timeout: time.Minute, HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
		got = key
		return errors.New("seen")
	}}
	if c, err := ssh.Dial("tcp", net.JoinHostPort(p.IP, "2222"), cfg); err == nil {
		c.Close()
	}
	if got == nil {
		t.Fatalf("%s's SSH gateway presented no host key", p.Name)
	}
	return got
}

// buildSbx builds sbx as it ships (static, carrying the agent).
func buildSbx(t *testing.T) string {
	t.Helper()
	bin, err := testenv.BuildSbx(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// importImages makes serve's and the agent's images (tag e2e) and the base
// template's with bin, imports them into the cluster and answers the base
// template's image.
func importImages(t *testing.T, bin string) (baseImage string) {
	t.Helper()
	dir := t.TempDir()
	sbxCLI(t, bin, "kubernetes", "images", "-o", dir, "--tag", "e2e")
	store, err := testtemplates.Base()
	if err != nil {
		t.Fatal(err)
	}
	out := sbxCLI(t, bin, "template", "export", "base", "--templates-dir", store.Dir, "-o", filepath.Join(dir, "base.tar"), "--json")
	var exported struct{ Image string }
	if err := json.Unmarshal([]byte(out), &exported); err != nil {
		t.Fatalf("sbx template export: %v: %s", err, out)
	}
	for _, f := range []string{"sbx.tar", "sbx-agent.tar", "base.tar"} {
		k8stest.Import(t, filepath.Join(dir, f))
	}
	return exported.Image
}

func sbxCLI(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("sbx %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := k8stest.Kubectl(t, "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pod is one of serve's pods.
type pod struct {
	Name, IP string
	Deleting bool
}

// servePods lists serve's pods.
func servePods(t *testing.T) []pod {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string
				DeletionTimestamp *string
			}
			Status struct{ PodIP string }
		}
	}
	if err := json.Unmarshal([]byte(kubectl(t, "-n", serveNS, "get", "pods", "-l", serveLabel, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	var pods []pod
	for _, p := range list.Items {
		pods = append(pods, pod{Name: p.Metadata.Name, IP: p.Status.PodIP, Deleting: p.Metadata.DeletionTimestamp != nil})
	}
	return pods
}

// logs is what p's serve logged (its container's current run).
func logs(t *testing.T, p pod) string {
	t.Helper()
	out, err := k8stest.Kubectl(t, "", "-n", serveNS, "logs", p.Name)
	if err != nil {
		return "" // not started yet, or gone
	}
	return out
}

// adminKey makes an org-wide key with the CLI in the replica that made
// the org and the admin key at first start, which it reads from its data
// dir, as docs/KUBERNETES.md tells an operator to.
func adminKey(t *testing.T) string {
	t.Helper()
	for _, p := range servePods(t) {
		if !strings.Contains(logs(t, p), "first start: created the default org") {
			continue
		}
		var made apiv1.CreatedKey
		out := kubectl(t, "-n", serveNS, "exec", p.Name, "--", "/sbx", "key", "create", "e2e", "--json")
		if err := json.Unmarshal([]byte(out), &made); err != nil || made.Secret == "" {
			t.Fatalf("sbx key create in %s: %v: %s", p.Name, err, out)
		}
		return made.Secret
	}
	t.Fatal("no replica says it made the org and the admin key")
	return ""
}

// client is the Go client on the replica at p's IP.
func (d *deployment) client(p pod) *client.Client {
	return client.New(client.Options{URL: "http://" + p.IP + ":7070", APIKey: d.key, HTTPClient: &http.Client{Timeout: 3 * time.Minute}})
}

// leader waits for the one live replica (not deleting, not named by
// except) whose log says it leads, and answers it.
func leader(t *testing.T, except string) pod {
	t.Helper()
	var found pod
	eventually(t, "a replica leads", 3*time.Minute, func() (bool, string) {
		var leading []string
		for _, p := range servePods(t) {
			if p.Name != except && !p.Deleting && strings.Contains(logs(t, p), leadsLine) {
				found = p
				leading = append(leading, p.Name)
			}
		}
		return len(leading) == 1, fmt.Sprintf("replicas leading: %q", leading)
	})
	return found
}

// eventually polls cond until it holds, failing t with cond's last word
// after limit: a bound on a wait, not a timed assertion.
func eventually(t *testing.T, what string, limit time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, limit, detail)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dump logs what a failed test leaves to read: serve's logs, the pods of
// both namespaces and the sandbox namespace's events.
func dump(t *testing.T) {
	for _, args := range [][]string{
		{"-n", serveNS, "logs", "-l", serveLabel, "--prefix", "--tail=100"},
		{"get", "pods", "-A", "-o", "wide"},
		{"-n", sandboxNS, "get", "events", "--sort-by=.lastTimestamp"},
	} {
		out, err := k8stest.Kubectl(t, "", args...)
		t.Logf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
