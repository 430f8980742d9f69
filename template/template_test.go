package template

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbxdev/sbx"

	"github.com/sbxdev/sbx/internal/testenv"
)

func TestHostMirror(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sources.list.d"), 0o755)
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := HostMirror("bookworm", dir); err == nil {
		t.Fatal("found a mirror with no sources")
	}
	write("sources.list.d/debian.sources", `Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main

# a comment: line
Types: deb deb-src
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
`)
	if got, err := HostMirror("bookworm", dir); err != nil || got != "http://mirror.example/debian" {
		t.Fatalf("deb822: %q %v", got, err)
	}
	write("sources.list", "# old style\ndeb [arch=amd64 signed-by=/k.gpg] http://one.example/debian bookworm main\n")
	if got, _ := HostMirror("bookworm", dir); got != "http://one.example/debian" {
		t.Fatalf("one-line: %q", got)
	}
	if _, err := HostMirror("trixie", dir); err == nil || !strings.Contains(err.Error(), "--mirror") {
		t.Fatalf("unknown suite: %v", err)
	}
}

func TestNamesAreChecked(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	for _, bad := range []string{"", "../x", "Base", "a/b"} {
		if _, err := s.Current(bad); err == nil {
			t.Errorf("Current(%q) accepted the name", bad)
		}
		if _, err := s.BuildDebian(context.Background(), bad, DebianOptions{Mirror: "http://x"}, io.Discard); err == nil {
			t.Errorf("BuildDebian(%q) accepted the name", bad)
		}
	}
	if _, err := s.Current("base"); err == nil || !strings.Contains(err.Error(), "sbx template build base") {
		t.Fatalf("missing template: %v", err)
	}
}

// needsDebootstrap skips without root or debootstrap, and fails in CI.
func needsDebootstrap(t *testing.T) {
	_, err := exec.LookPath("debootstrap")
	if os.Geteuid() == 0 && err == nil {
		return
	}
	testenv.Missing(t, "building templates needs root and debootstrap; scripts/test.sh installs it")
}

// Both built-in templates build from the host's mirror; a rebuild is a new
// version and leaves the old one as it was.
func TestBuildDebianTemplates(t *testing.T) {
	needsDebootstrap(t)
	s := Store{Dir: t.TempDir()}
	ctx := context.Background()
	var log strings.Builder
	base, err := s.BuildDebian(ctx, "base", DebianOptions{}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "Base system installed successfully") {
		t.Errorf("no progress shown:\n%s", log.String())
	}
	for _, f := range []string{"bin/bash", "usr/bin/curl", "usr/bin/git", "usr/bin/ps", "etc/ssl/certs/ca-certificates.crt"} {
		if _, err := os.Stat(filepath.Join(base.Rootfs(), f)); err != nil {
			t.Errorf("base lacks %s: %v", f, err)
		}
	}
	if info, err := os.Stat(filepath.Join(base.Rootfs(), "workspace")); err != nil || !info.IsDir() {
		t.Errorf("base has no /workspace: %v", err)
	}
	// Its sandboxes run as the unprivileged user, UID 1000, who owns /workspace.
	if uid, gid, err := idsIn(base.Rootfs(), "user"); err != nil || uid != 1000 || gid != 1000 || base.User != "user" || base.Recipe != RecipeRevision {
		t.Errorf("base's default user: %s (recipe %d), uid %d gid %d, %v", base.User, base.Recipe, uid, gid, err)
	}
	for _, d := range []string{"workspace", "home/user"} {
		if info, err := os.Stat(filepath.Join(base.Rootfs(), d)); err != nil || info.Sys().(*syscall.Stat_t).Uid != 1000 {
			t.Errorf("/%s does not belong to user: %v", d, err)
		}
	}
	if cur, err := s.Current("base"); err != nil || cur.User != "user" {
		t.Errorf("template.json's user: %+v %v", cur, err)
	}
	ci, err := s.BuildDebian(ctx, "code-interpreter", DebianOptions{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ci.Rootfs(), "usr/lib/python3/dist-packages/numpy")); err != nil {
		t.Errorf("code-interpreter lacks numpy: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ci.Rootfs(), "usr/bin/pip3")); err != nil {
		t.Errorf("code-interpreter lacks pip: %v", err)
	}
	marker := filepath.Join(base.Rootfs(), "etc", "hostname")
	before, _ := os.ReadFile(marker)
	again, err := s.BuildDebian(ctx, "base", DebianOptions{Packages: []string{"bash"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if again.Version == base.Version || again.Dir == base.Dir {
		t.Fatal("a rebuild reused the version directory")
	}
	if cur, err := s.Current("base"); err != nil || cur.Version != again.Version {
		t.Fatalf("current is %+v (%v), want the rebuild", cur, err)
	}
	if after, err := os.ReadFile(marker); err != nil || string(after) != string(before) {
		t.Fatalf("the old version changed: %v", err)
	}
	list, err := s.List()
	if err != nil || len(list) != 2 || list[0].Name != "base" || list[1].Name != "code-interpreter" {
		t.Fatalf("list: %+v %v", list, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(s.Dir, "*", ".building-*"))
	if len(leftovers) > 0 {
		t.Fatalf("build directories left behind: %v", leftovers)
	}
}

// A build whose download from the mirror fails is tried again from the
// start, up to downloadAttempts times; the error says what failed.
func TestDownloadFailuresAreRetried(t *testing.T) {
	needsDebootstrap(t)
	defer func(d time.Duration) { retryDelay = d }(retryDelay)
	retryDelay = 10 * time.Millisecond
	s := Store{Dir: t.TempDir()}
	var log strings.Builder
	_, err := s.BuildDebian(context.Background(), "base", DebianOptions{Mirror: "http://127.0.0.1:9/debian"}, &log)
	if err == nil || !strings.Contains(err.Error(), "Failed getting release") {
		t.Fatalf("build from a mirror that refuses: %v", err)
	}
	if n := strings.Count(log.String(), "trying again from the start"); n != downloadAttempts-1 {
		t.Errorf("%d retries, want %d:\n%s", n, downloadAttempts-1, log.String())
	}
	if _, err := s.Current("base"); err == nil {
		t.Error("a failed build became current")
	}
}

func TestOnlyDownloadFailuresAreRetried(t *testing.T) {
	for msg, want := range map[string]bool{
		"exit status 1: I: Retrieving Release | E: Failed getting release file http://x/dists/bookworm/Release": true,
		"exit status 1: E: Couldn't download packages: libc6":                                                   true,
		"exit status 1: E: Couldn't find these debs: no-such-package":                                           false,
		"exit status 1: E: No space left on device":                                                             false,
	} {
		if got := downloadFailed(errors.New(msg)); got != want {
			t.Errorf("downloadFailed(%q) = %v", msg, got)
		}
	}
}

// A derived template shares its source's files (hard links), keeps its
// directories' modes, and has its own start command; the source is as it was.
func TestDeriveGivesATemplateAStartCommand(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	building := filepath.Join(s.Dir, "src-building")
	root := filepath.Join(building, "rootfs")
	for _, dir := range []string{"bin", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(root, "tmp"), 0o1777|os.ModeSticky)
	if err := os.WriteFile(filepath.Join(root, "bin", "tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin/tool", filepath.Join(root, "tool")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(s.Dir, "src"), 0o755)
	src, err := s.publish(Template{Name: "src", Version: "v1", Source: "test"}, building)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Derive("web", "src", "cd /app && ./serve")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := s.Current("web")
	if err != nil || cur.StartCmd != "cd /app && ./serve" || cur.Version != d.Version || !strings.Contains(cur.Source, "template src version v1") {
		t.Fatalf("current %+v, %v", cur, err)
	}
	a, _ := os.Stat(filepath.Join(src.Rootfs(), "bin", "tool"))
	b, err := os.Stat(filepath.Join(cur.Rootfs(), "bin", "tool"))
	if err != nil || !os.SameFile(a, b) {
		t.Errorf("the derived file is not the source's: %v", err)
	}
	if link, err := os.Readlink(filepath.Join(cur.Rootfs(), "tool")); err != nil || link != "bin/tool" {
		t.Errorf("symlink %q, %v", link, err)
	}
	if fi, err := os.Stat(filepath.Join(cur.Rootfs(), "tmp")); err != nil || fi.Mode()&os.ModeSticky == 0 || fi.Mode().Perm() != 0o777 {
		t.Errorf("tmp mode %v, %v", fi.Mode(), err)
	}
	if orig, _ := s.Current("src"); orig.StartCmd != "" || orig.Version != "v1" {
		t.Errorf("the source changed: %+v", orig)
	}
	if _, err := s.Derive("bad", "src", "a\x00b"); err == nil {
		t.Error("a start command with NUL was taken")
	}
	if _, err := s.Derive("other", "missing", ""); err == nil || !strings.Contains(err.Error(), "not built") {
		t.Errorf("deriving from a missing template: %v", err)
	}
}

// A template may carry its sandboxes' default egress policy, checked and
// written as sbx.CheckEgress writes it; a derived template keeps its
// source's unless it names its own.
func TestTemplateEgress(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	building := filepath.Join(s.Dir, "src-building")
	if err := os.MkdirAll(filepath.Join(building, "rootfs", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(s.Dir, "src"), 0o755)
	if _, err := s.publish(Template{Name: "src", Version: "v1", Source: "test"}, building); err != nil {
		t.Fatal(err)
	}
	allow := &sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"Example.com.", "203.0.113.7"}}
	if _, err := s.DeriveWith("locked", "src", DeriveOptions{Egress: allow}); err != nil {
		t.Fatal(err)
	}
	cur, err := s.Current("locked")
	want := sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"example.com", "203.0.113.7/32"}}
	if err != nil || cur.Egress == nil || !cur.Egress.Equal(want) {
		t.Fatalf("locked: %+v, %v; want egress %+v", cur.Egress, err, want)
	}
	if _, err := s.Derive("child", "locked", "true"); err != nil {
		t.Fatal(err)
	}
	if child, _ := s.Current("child"); child.Egress == nil || !child.Egress.Equal(want) {
		t.Errorf("the derived template's egress = %+v; want its source's", child.Egress)
	}
	if plain, _ := s.Current("src"); plain.Egress != nil {
		t.Errorf("a template built without one has egress %+v", plain.Egress)
	}
	_, err = s.DeriveWith("bad", "src", DeriveOptions{Egress: &sbx.Egress{Mode: sbx.EgressAllow, Allow: []string{"10.0.0.1"}}})
	if err == nil || !strings.Contains(err.Error(), "egress.allow[0]: 10.0.0.1/32 is within 10.0.0.0/8 (private)") {
		t.Errorf("a private allow: %v", err)
	}
}

// A template's ports are checked when it is made and a derived template
// keeps its source's unless it names its own.
func TestTemplatePorts(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	building := filepath.Join(s.Dir, "src-building")
	if err := os.MkdirAll(filepath.Join(building, "rootfs", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(s.Dir, "src"), 0o755)
	if _, err := s.publish(Template{Name: "src", Version: "v1", Source: "test"}, building); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeriveWith("web", "src", DeriveOptions{Ports: []int{3000}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Derive("child", "web", ""); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]int{"web": {3000}, "child": {3000}, "src": nil} {
		if cur, err := s.Current(name); err != nil || !slices.Equal(cur.Ports, want) {
			t.Errorf("%s: ports %v %v, want %v", name, cur.Ports, err, want)
		}
	}
	for _, bad := range [][]int{{22}, {49983}, {0}, {70000}} {
		if _, err := s.DeriveWith("bad", "src", DeriveOptions{Ports: bad}); err == nil || !strings.Contains(err.Error(), "never reached through a preview") {
			t.Errorf("ports %v: %v", bad, err)
		}
	}
}
