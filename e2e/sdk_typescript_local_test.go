package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

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
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a hang guard
	defer cancel()
	env := append(os.Environ(), "SBX_URL="+s.url, "SBX_API_KEY="+s.key, "NO_COLOR=1")
	for _, args := range [][]string{{"run", "build"}, {"test"}} {
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = dir
		cmd.Env = append(env, "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("npm %v in sdk/typescript failed: %v\n%s\nserve's log:\n%s", args, err, out, s.out)
		}
		t.Logf("npm %v:\n%s", args, out)
	}
}
