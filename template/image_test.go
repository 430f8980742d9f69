package template

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestWriteTree(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a/b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a/f"), []byte("x"), 0o644)
	os.Link(filepath.Join(dir, "a/f"), filepath.Join(dir, "a/b/g"))
	os.Symlink("../f", filepath.Join(dir, "a/b/l"))
	var sb strings.Builder
	if err := WriteTree(&sb, dir); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "a/b/g") || !strings.Contains(sb.String(), "../f") {
		t.Error("the tar lacks the link or the symlink")
	}
}

// A template is an image of one layer, its tree, configured as its
// sandboxes run; docker-archive tarballs of it read back whole.
func TestImage(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	building := filepath.Join(s.Dir, "web-building")
	root := filepath.Join(building, "rootfs")
	os.MkdirAll(filepath.Join(root, "home/user"), 0o755)
	os.MkdirAll(filepath.Join(root, "bin"), 0o755)
	os.WriteFile(filepath.Join(root, "bin/serve"), []byte("#!/bin/sh\nexec true\n"), 0o755)
	os.Symlink("bin/serve", filepath.Join(root, "serve"))
	os.Chown(filepath.Join(root, "home/user"), 1000, 1000)
	os.MkdirAll(filepath.Join(s.Dir, "web"), 0o755)
	created := time.Date(2026, 11, 28, 6, 24, 39, 0, time.UTC)
	tmpl, err := s.publish(Template{Name: "web", Version: "20261128T062439Z", Source: "test", StartCmd: "/bin/serve --port 8080",
		User: "user", Workdir: "/home/user", Ports: []int{8080}, Created: created}, building)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	img, err := Image(tmpl, filepath.Join(dir, "layer.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	ref := ImageRef("", tmpl)
	if ref != "sbx-template/web:20261128T062439Z" {
		t.Errorf("ImageRef %q", ref)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "web.tar")
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || !cfg.Created.Time.Equal(created) {
		t.Errorf("platform %s/%s, created %v", cfg.OS, cfg.Architecture, cfg.Created)
	}
	if c.User != "user" || c.WorkingDir != "/home/user" || !slices.Equal(c.Env, BaseEnv) || len(c.Entrypoint)+len(c.Cmd) != 0 {
		t.Errorf("config %+v", c)
	}
	if c.Labels[LabelName] != "web" || c.Labels[LabelVersion] != tmpl.Version || c.Labels[LabelStart] != "/bin/serve --port 8080" {
		t.Errorf("labels %v", c.Labels)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v", c.ExposedPorts)
	}
	layers, _ := back.Layers()
	if len(layers) != 1 {
		t.Fatalf("%d layers", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = h
	}
	if h := got["home/user/"]; h == nil || h.Uid != 1000 || h.Gid != 1000 {
		t.Errorf("home/user/: %+v", h)
	}
	if h := got["bin/serve"]; h == nil || h.Mode&0o777 != 0o755 || h.Size != int64(len("#!/bin/sh\nexec true\n")) {
		t.Errorf("bin/serve: %+v", h)
	}
	if h := got["serve"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "bin/serve" {
		t.Errorf("serve: %+v", h)
	}
}

// A template without a start command, user or ports has neither label
// nor exposed port, and runs as root.
func TestImageOfAPlainTemplate(t *testing.T) {
	c := imageConfig(Template{Name: "base", Version: "v1"})
	if _, ok := c.Labels[LabelStart]; ok || c.ExposedPorts != nil || c.User != "" {
		t.Errorf("config %+v", c)
	}
}
