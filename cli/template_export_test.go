package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/sbxdev/sbx/internal/testregistry"
	"github.com/sbxdev/sbx/template"
)

// `template export` writes a template of the host as a docker-archive
// tarball tagged sbx-template/NAME:VERSION, or --tag; a version or a
// template that is not there, or a reference that is none, writes nothing.
func TestTemplateExport(t *testing.T) {
	t.Setenv("SBX_REGISTRY_USERNAME", testregistry.User)
	t.Setenv("SBX_REGISTRY_PASSWORD", testregistry.Password)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	dir, ref := t.TempDir(), imageRef(t)
	if code, _, errOut := sbx(t, "template", "build", "app", "--data-dir", dir, "--from", ref, "--insecure", "--start", "cd /app && ./serve"); code != 0 {
		t.Fatalf("build: exit %d: %s", code, errOut)
	}
	tmpl, err := template.Store{Dir: filepath.Join(dir, "templates")}.Current("app")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	file := filepath.Join(out, "app.tar")
	code, stdout, errOut := sbx(t, "template", "export", "app", "--data-dir", dir, "-o", file, "--json")
	var e struct{ Image, File string }
	want := "sbx-template/app:" + tmpl.Version
	if code != 0 || json.Unmarshal([]byte(stdout), &e) != nil || e.Image != want || e.File != file {
		t.Fatalf("export: exit %d %s\n%s", code, errOut, stdout)
	}
	tag, _ := name.NewTag(want)
	img, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil || cfg.Config.Labels[template.LabelStart] != "cd /app && ./serve" || cfg.Config.Labels[template.LabelVersion] != tmpl.Version {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(out, ".*")); len(leftovers) != 0 {
		t.Errorf("export left %v", leftovers)
	}

	byDir := filepath.Join(out, "by-dir.tar")
	code, stdout, _ = sbx(t, "template", "export", "app", "--templates-dir", filepath.Join(dir, "templates"), "-o", byDir)
	if code != 0 || strings.TrimSpace(stdout) != byDir+": "+want {
		t.Errorf("export --templates-dir: exit %d, %q", code, stdout)
	}
	prefixed := filepath.Join(out, "prefixed.tar")
	code, stdout, _ = sbx(t, "template", "export", "app", "--data-dir", dir, "--tag-prefix", "registry.example/sbx/", "-o", prefixed)
	if code != 0 || strings.TrimSpace(stdout) != prefixed+": registry.example/sbx/"+want {
		t.Errorf("export --tag-prefix: exit %d, %q", code, stdout)
	}
	other := filepath.Join(out, "other.tar")
	code, stdout, _ = sbx(t, "template", "export", "app", "--data-dir", dir, "--version", tmpl.Version, "--tag", "registry.example/sbx/app:1", "-o", other)
	if code != 0 || strings.TrimSpace(stdout) != other+": registry.example/sbx/app:1" {
		t.Errorf("export --tag: exit %d, %q", code, stdout)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, "not built"},
		{[]string{"app", "--version", "v0"}, "no version"},
		{[]string{"app", "--tag", "Not A Tag"}, "image reference"},
	} {
		bad := filepath.Join(out, "bad.tar")
		code, _, errOut := sbx(t, append([]string{"template", "export", "--data-dir", dir, "-o", bad}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("export %q: exit %d, stderr %q", c.args, code, errOut)
		}
		if _, err := os.Stat(bad); !os.IsNotExist(err) {
			t.Errorf("export %q wrote its file: %v", c.args, err)
		}
	}
	if code, _, errOut := sbx(t, "template", "export", "app", "--data-dir", dir); code != 2 || !strings.Contains(errOut, "needs -o FILE.tar") {
		t.Errorf("export without -o: exit %d, stderr %q", code, errOut)
	}
}
