package template

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sbxdev/sbx/internal/testregistry"
)

type entry struct {
	name, body, link string
	kind             byte
	mode             int64
}

// layer makes an image layer from entries.
func layer(t *testing.T, entries ...entry) v1.Layer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.kind, Mode: e.mode, Linkname: e.link, Size: int64(len(e.body))}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	return testregistry.Layer(t, buf.Bytes())
}

// privateRegistry runs a registry that wants testregistry's credentials,
// and pushes an image of layers to it.
func privateRegistry(t *testing.T, repo string, layers ...v1.Layer) string {
	return testregistry.Serve(t).Push(t, repo, "v1", v1.Config{}, layers...)
}

func TestBuildFromOCIImage(t *testing.T) {
	ref := privateRegistry(t, "team/tools",
		layer(t, entry{name: "etc/", kind: tar.TypeDir, mode: 0o755},
			entry{name: "etc/motd", body: "old", kind: tar.TypeReg, mode: 0o644},
			entry{name: "usr/bin/tool", body: "#!/bin/sh\n", kind: tar.TypeReg, mode: 0o755},
			entry{name: "bin", link: "usr/bin", kind: tar.TypeSymlink, mode: 0o777}),
		layer(t, entry{name: "etc/motd", body: "hello", kind: tar.TypeReg, mode: 0o600},
			entry{name: "usr/bin/tool2", link: "usr/bin/tool", kind: tar.TypeLink}))
	s := Store{Dir: t.TempDir()}
	ctx := context.Background()
	if _, err := s.BuildOCI(ctx, "tools", ref, OCIOptions{Insecure: true, Username: testregistry.User, Password: "wrong"}, io.Discard); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToUpper(err.Error()), "UNAUTHORIZED") {
		t.Fatalf("pull with bad credentials: %v", err)
	}
	var log strings.Builder
	tmpl, err := s.BuildOCI(ctx, "tools", ref, OCIOptions{Insecure: true, Username: testregistry.User, Password: testregistry.Password}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	root := tmpl.Rootfs()
	if b, _ := os.ReadFile(filepath.Join(root, "etc/motd")); string(b) != "hello" {
		t.Errorf("the upper layer does not win: %q", b)
	}
	if info, _ := os.Stat(filepath.Join(root, "etc/motd")); info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", info.Mode())
	}
	if target, _ := os.Readlink(filepath.Join(root, "bin")); target != "usr/bin" {
		t.Errorf("symlink %q", target)
	}
	a, _ := os.Stat(filepath.Join(root, "usr/bin/tool"))
	b, _ := os.Stat(filepath.Join(root, "usr/bin/tool2"))
	if !os.SameFile(a, b) || a.Mode().Perm() != 0o755 {
		t.Errorf("hard link or mode lost")
	}
	if info, err := os.Stat(filepath.Join(root, "workspace")); err != nil || !info.IsDir() {
		t.Errorf("no /workspace")
	}
	if cur, _ := s.Current("tools"); cur.Version != tmpl.Version || !strings.HasPrefix(cur.Source, "oci ") || !strings.Contains(cur.Source, "@sha256:") {
		t.Errorf("current %+v", cur)
	}
}

// An image cannot write outside its root, through ".." or a hard link (which
// go-containerregistry drops while flattening) or through a symlink an earlier
// layer planted (which the os.Root unpacking refuses).
func TestOCIImageCannotEscape(t *testing.T) {
	outside := t.TempDir()
	for name, layers := range map[string][]v1.Layer{
		"dotdot": {layer(t, entry{name: "../../escaped", body: "x", kind: tar.TypeReg, mode: 0o644})},
		"symlink": {
			layer(t, entry{name: "out", link: outside, kind: tar.TypeSymlink, mode: 0o777}),
			layer(t, entry{name: "out/escaped", body: "x", kind: tar.TypeReg, mode: 0o644}),
		},
		"hardlink": {layer(t, entry{name: "passwd", link: "../../../../etc/passwd", kind: tar.TypeLink})},
	} {
		t.Run(name, func(t *testing.T) {
			ref := privateRegistry(t, "evil/"+name, layers...)
			s := Store{Dir: t.TempDir()}
			tmpl, err := s.BuildOCI(context.Background(), "evil", ref, OCIOptions{Insecure: true, Username: testregistry.User, Password: testregistry.Password}, io.Discard)
			if _, err := os.Stat(filepath.Join(outside, "escaped")); err == nil {
				t.Fatal("a file was written outside the root")
			}
			if name == "symlink" {
				if err == nil {
					t.Fatal("writing through a planted symlink did not fail the build")
				}
				if _, err := s.Current("evil"); err == nil {
					t.Fatal("a failed build became current")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			passwd, _ := os.Stat("/etc/passwd")
			if got, err := os.Stat(filepath.Join(tmpl.Rootfs(), "passwd")); err == nil && os.SameFile(got, passwd) {
				t.Fatal("the template links the host's /etc/passwd")
			}
		})
	}
}

// A start command is kept with the version it was built into, and one the
// agent could not be given is refused before anything is pulled or built.
func TestStartCommand(t *testing.T) {
	ref := privateRegistry(t, "team/app", layer(t, entry{name: "app/", kind: tar.TypeDir, mode: 0o755}))
	s := Store{Dir: t.TempDir()}
	ctx := context.Background()
	opts := OCIOptions{Insecure: true, Username: testregistry.User, Password: testregistry.Password}
	plain, err := s.BuildOCI(ctx, "plain", ref, opts, io.Discard)
	if err != nil || plain.StartCmd != "" {
		t.Fatalf("without a start command: %+v %v", plain, err)
	}
	opts.StartCmd = "cd /app\npython3 -m http.server 8000 # a newline is fine for sh -c"
	built, err := s.BuildOCI(ctx, "app", ref, opts, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cur, err := s.Current("app"); err != nil || cur.StartCmd != opts.StartCmd || cur.Version != built.Version {
		t.Fatalf("current %+v %v", cur, err)
	}
	if list, err := s.List(); err != nil || len(list) != 2 || list[0].StartCmd != opts.StartCmd || list[1].StartCmd != "" {
		t.Fatalf("list %+v %v", list, err)
	}
	for _, bad := range []string{"sleep\x00 1", strings.Repeat("x", maxStartCmd+1)} {
		opts.StartCmd = bad
		if _, err := s.BuildOCI(ctx, "bad", ref, opts, io.Discard); err == nil || !strings.Contains(err.Error(), "start command") {
			t.Errorf("BuildOCI with start %.20q: %v", bad, err)
		}
		if _, err := s.BuildDebian(ctx, "bad", DebianOptions{Mirror: "http://x", StartCmd: bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "start command") {
			t.Errorf("BuildDebian with start %.20q: %v", bad, err)
		}
	}
	if _, err := s.Current("bad"); err == nil {
		t.Fatal("a refused build became current")
	}
}
