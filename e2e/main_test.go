// Package e2e holds the end-to-end tests: they start real `sbx serve`
// processes and drive them over HTTP and through the CLI, as a user would.
//
// The server processes are this test binary re-executed as `sbx serve` with
// one addition, the Memory test provider, so that sandboxes can be created
// before a real isolation provider exists. Every response is checked against
// the OpenAPI document.
package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/cli"
	"github.com/sbxdev/sbx/httpapi"
	"github.com/sbxdev/sbx/internal/contract"
	"github.com/sbxdev/sbx/internal/k8stest"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/providertest"
)

// serveEnv, when set, makes this binary run `sbx serve` instead of the tests.
const serveEnv = "SBX_E2E_SERVE"

var (
	validator *contract.Validator
	sbxBin    string // the real sbx binary, for CLI tests
)

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		delay, _ := time.ParseDuration(os.Getenv("SBX_MEMORY_CREATE_DELAY"))
		mem := providertest.NewMemory(providertest.MemoryOptions{StateDir: os.Getenv("SBX_MEMORY_STATE_DIR"), CreateDelay: delay})
		os.Exit(cli.Run(os.Args[1:], cli.Options{Providers: []sbx.Provider{mem}}))
	}
	os.Exit(k8stest.Around(func() int { return run(m) }))
}

func run(m *testing.M) int {
	var err error
	if validator, err = contract.New(httpapi.OpenAPI); err != nil {
		fmt.Fprintln(os.Stderr, "openapi:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "sbx-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if sbxBin, err = testenv.BuildSbx(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 {
		return code
	}
	if errs := validator.Errors(); len(errs) > 0 {
		fmt.Fprintln(os.Stderr, "responses that do not match the OpenAPI document:")
		for _, e := range errs {
			fmt.Fprintln(os.Stderr, "  ", e)
		}
		return 1
	}
	if fullRun() {
		if missing := validator.Unexercised(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "documented operations no end-to-end test exercised:\n   %s\n", strings.Join(missing, "\n   "))
			return 1
		}
	}
	return 0
}

// fullRun reports whether every test ran (no -run or -skip filter, not -short).
func fullRun() bool {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.run") || strings.HasPrefix(a, "-test.skip") || strings.HasPrefix(a, "-test.short") || strings.HasPrefix(a, "-test.bench") {
			return false
		}
	}
	return true
}
