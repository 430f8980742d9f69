package e2e

import (
	"crypto/tls"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// The unmodified E2B SDKs from npm (e2b, @e2b/code-interpreter, pinned by
// e2e/e2b/package-lock.json) drive a real serve with gVisor sandboxes over
// HTTPS, in both of the SDK's routing modes: each sandbox at its own host
// ({port}-{id}.sbx.localhost), and every sandbox through serve's one
// address (E2B_SANDBOX_URL). The suite is e2e/e2b/e2b.test.mjs.
func TestE2BSDKLocal(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node (apt-get install nodejs)")
	}
	dir, err := filepath.Abs("e2b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "e2b")); err != nil {
		testenv.Missing(t, "the E2B SDKs (npm ci --prefix e2e/e2b)")
	}
	if _, err := testtemplates.Catalog("code-interpreter"); err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	cert, key := filepath.Join(certDir, "cert.pem"), filepath.Join(certDir, "key.pem")
	roots := testenv.WriteCert(t, cert, key, "sbx.localhost", "*.sbx.localhost")
	s := localServerWith(t, false, serverOpts{tls: &tls.Config{RootCAs: roots}, args: []string{"--tls-cert", cert, "--tls-key", key, "--domain", "sbx.localhost"}})
	for _, mode := range []struct {
		name string
		env  []string
	}{
		{"sandbox hosts", nil},
		{"E2B_SANDBOX_URL", []string{"E2B_SANDBOX_URL=" + s.url}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			env := append([]string{"E2B_API_URL=" + s.url + "/e2b", "E2B_API_KEY=" + s.key, "SBX_DOMAIN=sbx.localhost", "NODE_EXTRA_CA_CERTS=" + cert}, mode.env...)
			s.runSuite(t, "the E2B SDK suite", dir, env, node, "--import", "./resolve.mjs", "--test", "--test-concurrency=1", "--test-reporter=spec", "e2b.test.mjs")
		})
	}
}
