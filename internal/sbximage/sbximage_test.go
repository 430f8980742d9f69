package sbximage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// staticBinary builds a small static program (CGO_ENABLED=0) into dir.
func staticBinary(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644)
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GO111MODULE=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// readBack reads the tarball at file as docker load does: its manifest's
// tags, and the image they name.
func readBack(t *testing.T, file string) ([]string, v1.Image) {
	t.Helper()
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(file) })
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 {
		t.Fatalf("the tarball holds %d images, want 1", len(m))
	}
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m[0].RepoTags, img
}

// entry is a file of an image's layers.
type entry struct {
	mode int64
	uid  int
	data []byte
	dir  bool
}

// files reads every entry of img's layers.
func files(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]entry{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(tr)
			out[h.Name] = entry{mode: h.Mode, uid: h.Uid, data: data, dir: h.Typeflag == tar.TypeDir}
		}
		rc.Close()
	}
	return out
}

func TestServe(t *testing.T) {
	dir := t.TempDir()
	bin := staticBinary(t, dir)
	ca := filepath.Join(dir, "ca.crt")
	os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600)
	img, err := Serve(bin, ca, filepath.Join(dir, "layer"), Build{Version: "v1.2.3", Revision: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sbx.tar")
	if err := Write(out, "registry.example/sbx/sbx:v1.2.3", img); err != nil {
		t.Fatal(err)
	}
	tags, back := readBack(t, out)
	if !slices.Equal(tags, []string{"registry.example/sbx/sbx:v1.2.3"}) {
		t.Errorf("tags %q", tags)
	}
	cfg, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || cfg.Created.Unix() != 0 {
		t.Errorf("platform %s/%s, created %v", cfg.OS, cfg.Architecture, cfg.Created)
	}
	c := cfg.Config
	if !slices.Equal(c.Entrypoint, []string{"/sbx", "serve"}) || c.User != "65532:65532" || c.Labels["org.opencontainers.image.version"] != "v1.2.3" || c.Labels["org.opencontainers.image.revision"] != "abc" {
		t.Errorf("config %+v", c)
	}
	want, _ := os.ReadFile(bin)
	fs := files(t, back)
	if e := fs["sbx"]; !bytes.Equal(e.data, want) || e.mode != 0o755 || e.uid != 0 {
		t.Errorf("/sbx: mode %o uid %d, %d bytes of %d", e.mode, e.uid, len(e.data), len(want))
	}
	if e := fs["etc/ssl/certs/ca-certificates.crt"]; string(e.data) != "-----BEGIN CERTIFICATE-----\n" || e.mode != 0o644 {
		t.Errorf("the CA bundle: mode %o, %q", e.mode, e.data)
	}
	for _, d := range []string{"etc/", "etc/ssl/", "etc/ssl/certs/"} {
		if !fs[d].dir {
			t.Errorf("no directory %s", d)
		}
	}
	if len(fs) != 5 {
		t.Errorf("the layer holds %d entries, want 5", len(fs))
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".sbx.tar.*")); len(leftovers) != 0 {
		t.Errorf("Write left %v", leftovers)
	}
}

func TestAgent(t *testing.T) {
	dir := t.TempDir()
	bin := staticBinary(t, dir)
	os.Chmod(bin, 0o700)
	img, err := Agent(bin, filepath.Join(dir, "layer"), Build{Version: "v1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sbx-agent.tar")
	if err := Write(out, "sbx-agent:v1.2.3", img); err != nil {
		t.Fatal(err)
	}
	tags, back := readBack(t, out)
	if !slices.Equal(tags, []string{"sbx-agent:v1.2.3"}) {
		t.Errorf("tags %q", tags)
	}
	want, _ := os.ReadFile(bin)
	fs := files(t, back)
	if e := fs["sbx"]; !bytes.Equal(e.data, want) || e.mode != 0o755 || len(fs) != 1 {
		t.Errorf("/sbx: mode %o, %d bytes of %d; %d entries", e.mode, len(e.data), len(want), len(fs))
	}
	cfg, _ := back.ConfigFile()
	if cfg.Config.User != "" {
		t.Errorf("the agent's image runs as %q", cfg.Config.User)
	}
	// A docker-archive's manifest names the config and layers by file, as
	// docker load and ctr images import read them.
	m, _ := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
	raw, _ := json.Marshal(m)
	if !strings.Contains(string(raw), ".tar.gz") {
		t.Errorf("manifest %s names no gzipped layer", raw)
	}
}

func TestCheckStatic(t *testing.T) {
	dir := t.TempDir()
	if err := CheckStatic(staticBinary(t, dir)); err != nil {
		t.Errorf("a static binary: %v", err)
	}
	text := filepath.Join(dir, "script")
	os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755)
	if err := CheckStatic(text); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("a script: %v", err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	sh, _ = filepath.EvalSymlinks(sh)
	if err := CheckStatic(sh); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Errorf("%s: %v", sh, err)
	}
}

func TestWriteRefusesABadReference(t *testing.T) {
	dir := t.TempDir()
	img, err := Agent(staticBinary(t, dir), filepath.Join(dir, "layer"), Build{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "x.tar"), "Bad Name:1", img); err == nil {
		t.Fatal("wrote an image tagged \"Bad Name:1\"")
	}
	if _, err := os.Stat(filepath.Join(dir, "x.tar")); !os.IsNotExist(err) {
		t.Errorf("a refused write left its file: %v", err)
	}
}

func TestParents(t *testing.T) {
	if got := parents("/etc/ssl/certs/ca.crt"); !slices.Equal(got, []string{"etc", "etc/ssl", "etc/ssl/certs"}) {
		t.Errorf("parents: %q", got)
	}
	if got := parents("/sbx"); len(got) != 0 {
		t.Errorf("parents of /sbx: %q", got)
	}
}
