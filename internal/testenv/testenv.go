// Package testenv holds the one rule for tests whose prerequisites a host may
// lack (root, runsc, debootstrap, …): skip and say why, except in CI
// (CI=true), where a skip would hide a missing install step and so fails.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// InCI reports whether the tests run in CI.
func InCI() bool { return os.Getenv("CI") == "true" }

// Missing ends t for a missing prerequisite: a failure in CI, else a skip.
func Missing(t testing.TB, why string) {
	t.Helper()
	if InCI() {
		t.Fatal("missing prerequisite: " + why)
	}
	t.Skip("missing prerequisite: " + why)
}

// BuildSbx builds the sbx binary, static as it ships, into dir and returns
// its path: for tests that run it as a CLI, a server or a sandbox's agent.
func BuildSbx(dir string) (string, error) {
	bin := filepath.Join(dir, "sbx")
	build := exec.Command("go", "build", "-o", bin, "github.com/sbxdev/sbx/cmd/sbx")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sbx: %v\n%s", err, out)
	}
	return bin, nil
}

// AgentEnv is the environment for an agent served on the host by a test:
// the test's own, with HOME moved to an empty directory, so that the login
// shells the agent starts read none of the host user's profile (a profile
// that hangs, as pyenv's does behind a stale lock, would hang the test).
func AgentEnv(t testing.TB) []string {
	return append(os.Environ(), "HOME="+t.TempDir())
}
