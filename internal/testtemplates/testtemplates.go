// Package testtemplates shares one built base template among the tests of
// every package (local, bench, e2e) and every run on a host.
package testtemplates

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/sbxdev/sbx/template"
)

// Base returns a templates directory holding the base template,
// shared by every test package and every run on this host: a build takes a
// minute or more from the Debian mirror, and `go test ./...` runs packages
// side by side. It lives in $SBX_TEST_TEMPLATES (default
// <tmp>/sbx-test-templates), is built under a file lock by the first test
// that needs it, and is built again when the base recipe or what a build
// makes of it (template.RecipeRevision) changes. Tests
// only read it; versions are never changed in place, so sandboxes of
// several packages can use it at once.
func Base() (template.Store, error) {
	dir := os.Getenv("SBX_TEST_TEMPLATES")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "sbx-test-templates")
	}
	s := template.Store{Dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return s, err
	}
	unlock, err := lock(dir)
	if err != nil {
		return s, err
	}
	defer unlock()
	recipe, _ := template.CatalogEntryNamed("base")
	if t, err := s.Current("base"); err == nil && slices.Equal(t.Packages, recipe.Packages) && t.Recipe == template.RecipeRevision {
		return s, nil
	}
	if _, err := s.BuildDebian(context.Background(), "base", template.DebianOptions{}, io.Discard); err != nil {
		return s, fmt.Errorf("building the shared base template in %s: %w", dir, err)
	}
	return s, nil
}

// Catalog returns Base's directory holding also the catalog's template
// name, built (under the lock) when it is missing or was built from other
// packages, so runs share it: a catalog build downloads hundreds of MB.
func Catalog(name string) (template.Store, error) {
	s, err := Base()
	if err != nil {
		return s, err
	}
	e, ok := template.CatalogEntryNamed(name)
	if !ok {
		return s, fmt.Errorf("%s is not in the catalog", name)
	}
	unlock, err := lock(s.Dir)
	if err != nil {
		return s, err
	}
	defer unlock()
	if t, err := s.Current(name); err == nil && slices.Equal(t.Packages, e.Packages) && t.StartCmd == e.StartCmd && t.Recipe == template.RecipeRevision {
		return s, nil
	}
	var log strings.Builder
	if _, err := s.BuildDebian(context.Background(), name, template.DebianOptions{}, &log); err != nil {
		return s, fmt.Errorf("building the catalog's %s in %s: %w\n%s", name, s.Dir, err, tail(log.String(), 3000))
	}
	return s, nil
}

// lock takes the templates directory's file lock, which every run on the
// host shares, until unlock.
func lock(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", dir, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// Derived returns Base's directory holding also template name, derived
// from base with start command start: made (under the lock) when it is
// missing or has another start command, so runs share it.
func Derived(name, start string) (template.Store, error) {
	s, err := Base()
	if err != nil {
		return s, err
	}
	unlock, err := lock(s.Dir)
	if err != nil {
		return s, err
	}
	defer unlock()
	base, err := s.Current("base")
	if err != nil {
		return s, err
	}
	if t, err := s.Current(name); err == nil && t.StartCmd == start && strings.HasPrefix(t.Source, "template base version "+base.Version+" ") {
		return s, nil
	}
	_, err = s.Derive(name, "base", start)
	return s, err
}
