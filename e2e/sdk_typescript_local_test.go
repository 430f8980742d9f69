package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// The TypeScript SDK (sdk/typescript, @sbx/sdk) against a real serve with
// gVisor sandboxes: npm run build (tsc, pinned by its package-lock.json),
// then npm test, whose node:test suite covers reference 004's lifecycle,
// every command, file and PTY operation, the error classes, logs,
// metrics, runtimes, previews, snapshots, fork, volumes and runCode in
// the code-interpreter template, runs the README's examples, and fails
// when src/generated.ts lags the OpenAPI document.
func TestTypeScriptSDKLocal(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node (apt-get install nodejs)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		testenv.Missing(t, "npm (apt-get install npm)")
	}
	dir, err := filepath.Abs(filepath.Join("..", "sdk", "typescript"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range []string{"typescript", "ws"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", dep)); err != nil {
			testenv.Missing(t, "the TypeScript SDK's dev dependencies (npm ci --prefix sdk/typescript)")
		}
	}
	if _, err := testtemplates.Catalog("code-interpreter"); err != nil {
		t.Fatal(err)
	}
	s := localServer(t, false)
	env := []string{"SBX_URL=" + s.url, "SBX_API_KEY=" + s.key, "NO_COLOR=1", "PATH=" + filepath.Dir(node) + string(os.PathListSeparator) + os.Getenv("PATH")}
	s.runSuite(t, "npm run build in sdk/typescript", dir, env, npm, "run", "build")
	s.runSuite(t, "npm test in sdk/typescript", dir, env, npm, "test")
}
