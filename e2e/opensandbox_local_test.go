package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sbxdev/sbx/internal/testenv"
)

// The unmodified OpenSandbox SDK from npm (@alibaba-group/opensandbox,
// pinned by e2e/opensandbox/package-lock.json) drives a real serve with
// gVisor sandboxes: its lifecycle API at <serve>/opensandbox, and each
// sandbox's execd through the endpoint serve answers for it. The suite is
// e2e/opensandbox/opensandbox.test.mjs.
func TestOpenSandboxSDKLocal(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node (apt-get install nodejs)")
	}
	dir, err := filepath.Abs("opensandbox")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@alibaba-group", "opensandbox")); err != nil {
		testenv.Missing(t, "the OpenSandbox SDK (npm ci --prefix e2e/opensandbox)")
	}
	s := localServerWith(t, false, serverOpts{})
	var other struct{ Secret string }
	s.call("POST", "/api/v1/admin/orgs", map[string]any{"name": "opensandbox-other"}, http.StatusCreated, &other)
	env := []string{"OPEN_SANDBOX_DOMAIN=" + s.url + "/opensandbox", "OPEN_SANDBOX_API_KEY=" + s.key, "OSB_OTHER_KEY=" + other.Secret}
	s.runSuite(t, "the OpenSandbox SDK suite", dir, env, node, "--test", "--test-concurrency=1", "--test-reporter=spec", "opensandbox.test.mjs")
}
