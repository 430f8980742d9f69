package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A name that cannot name the server's table, namespaces and cgroup parent
// is refused before anything is made.
func TestRunRefusesABadName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, name := range []string{"sbx-a", "sbx/a", strings.Repeat("a", 65)} {
		err := Run(context.Background(), Config{DataDir: dir, DefaultProvider: "none", Local: LocalConfig{Name: name},
			Log: slog.New(slog.DiscardHandler), Out: io.Discard})
		if err == nil || !strings.Contains(err.Error(), "--name: instance name") {
			t.Errorf("serve --name %q: %v; want it refused", name, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the refused serves made the data dir: %v", err)
	}
}
