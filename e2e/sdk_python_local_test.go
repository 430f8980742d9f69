package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/internal/testtemplates"
)

// The Python SDK (sdk/python) against a real serve with gVisor sandboxes:
// its unittest suite, run by Debian's Python with Debian's httpx and
// websockets, covers the lifecycle of reference 004, every command, file
// and terminal operation, the error classes, logs and metrics, runtimes,
// previews, snapshots, forks, volumes, run_code in the code-interpreter
// template, and the examples of its README, sync and async.
func TestPythonSDKLocal(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		testenv.Missing(t, "Debian's python3 (apt-get install python3)")
	}
	if out, err := exec.Command(python, "-c", "import httpx, websockets").CombinedOutput(); err != nil {
		testenv.Missing(t, "Debian's python3-httpx and python3-websockets (apt-get install python3-httpx python3-websockets): "+string(out))
	}
	sdk, err := filepath.Abs(filepath.Join("..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testtemplates.Catalog("code-interpreter"); err != nil {
		t.Fatal(err)
	}
	s := localServer(t, false)
	s.runSuite(t, "the Python SDK's suite", sdk, []string{"PYTHONPATH=" + filepath.Join(sdk, "src") + string(os.PathListSeparator) + sdk,
		"SBX_URL=" + s.url, "SBX_API_KEY=" + s.key, "SBX_SDK_OFFLINE=", "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1"},
		python, "-m", "unittest", "discover", "-s", filepath.Join(sdk, "tests"), "-t", sdk, "-v")
}
