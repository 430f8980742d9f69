package local

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testenv"
)

// What a sandbox leaves on the host's disk (docs/SECURITY.md): its
// directory, bundle, checkpoint and runsc's state are 0700 directories of
// 0600 files while it lives, running and hibernated; the access token is in
// none of them but the checkpoint's memory image; the logs its owner reads
// name no host path; a kill removes all of it.
func TestWhatASandboxLeavesOnDisk(t *testing.T) {
	p := newProvider(t)
	bin, err := testenv.BuildSbx(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if p.agent, err = installAgentFile(p.cfg.DataDir, bin); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := "t" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	const token = "disk-test-token-0123456789abcdef0123456789"
	in, err := p.Create(ctx, sbx.Spec{SandboxID: uuid.NewString(), ProviderSandboxID: id, TemplateID: "base",
		Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 256}, AccessToken: token, Env: map[string]string{"SECRET": "an env value"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{p.sandboxesDir(), p.rs.Root} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want 0700", d, fi.Mode(), err)
		}
	}
	p.checkPrivate(t, id, token, "running")

	if err := p.Hibernate(ctx, in.Handle); err != nil {
		t.Fatal(err)
	}
	if images, _ := os.ReadDir(p.imageDir(id)); len(images) == 0 {
		t.Fatal("no checkpoint images")
	}
	p.checkPrivate(t, id, token, "hibernated")
	lines, err := p.Logs(ctx, in.Handle)
	if err != nil || len(lines) == 0 {
		t.Fatalf("logs: %v %v", lines, err)
	}
	for _, l := range lines {
		if strings.Contains(l.Line, p.cfg.DataDir) || strings.Contains(l.Line, templates.Dir) {
			t.Errorf("a log line names a host path: %q", l.Line)
		}
	}
	h, err := p.Resume(ctx, in.Handle)
	if err != nil {
		log, _ := os.ReadFile(p.outputFile(id))
		t.Fatalf("%v; the sandbox's output:\n%s", err, log)
	}
	p.checkPrivate(t, id, token, "woken")

	if err := p.Kill(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.dir(id)); !os.IsNotExist(err) {
		t.Errorf("the sandbox's directory is left after the kill: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(p.rs.Root, id+"*")); len(left) > 0 {
		t.Errorf("runsc's state is left after the kill: %v", left)
	}
}

// checkPrivate checks that every directory of a sandbox's on the host is
// 0700 and every file 0600, and that no file but a checkpoint image holds
// the token.
func (p *Provider) checkPrivate(t *testing.T, id, token, when string) {
	t.Helper()
	state, _ := filepath.Glob(filepath.Join(p.rs.Root, id+"*"))
	if len(state) == 0 && when != "hibernated" {
		t.Errorf("%s: no runsc state for %s", when, id)
	}
	for _, top := range append(state, p.dir(id)) {
		filepath.WalkDir(top, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Errorf("%s: %v", when, err)
				return nil
			}
			fi, err := d.Info()
			if err != nil || fi.Mode()&(fs.ModeSymlink|fs.ModeSocket) != 0 {
				return nil
			}
			want := fs.FileMode(0o600)
			if d.IsDir() {
				want = 0o700
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: %s is %v, want %v", when, path, fi.Mode().Perm(), want)
			}
			if !d.IsDir() && !strings.HasPrefix(path, p.imageDir(id)+"/") {
				if data, err := os.ReadFile(path); err == nil && bytes.Contains(data, []byte(token)) {
					t.Errorf("%s: %s holds the access token", when, path)
				}
			}
			return nil
		})
	}
}
