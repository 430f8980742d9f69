// Package testenv holds the one rule for tests whose prerequisites a host may
// lack (root, runsc, debootstrap, …): skip and say why, except in CI
// (CI=true), where a skip would hide a missing install step and so fails.
package testenv

import (
	"os"
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
