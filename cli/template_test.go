package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	sbxpkg "github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testregistry"
	"github.com/sbxdev/sbx/template"
)

// imageRef pushes a one-directory image whose CMD is a program to a
// registry of the test's own, and returns its reference.
func imageRef(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	return testregistry.Serve(t).Push(t, "team/app", "v1", v1.Config{Cmd: []string{"/bin/from-the-image"}}, testregistry.TreeLayer(t, dir, "app"))
}

// `template build --start` keeps the start command with the template, which
// `template list` shows; an image's CMD never becomes one; a NUL byte is a
// usage error that names the flag.
func TestTemplateStartCommand(t *testing.T) {
	t.Setenv("SBX_REGISTRY_USERNAME", testregistry.User)
	t.Setenv("SBX_REGISTRY_PASSWORD", testregistry.Password)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	dir, ref := t.TempDir(), imageRef(t)
	const start = "cd /app\npython3 -m http.server 8000"
	if code, _, errOut := sbx(t, "template", "build", "app", "--data-dir", dir, "--from", ref, "--insecure", "--start", start); code != 0 {
		t.Fatalf("build: exit %d: %s", code, errOut)
	}
	if code, _, errOut := sbx(t, "template", "build", "image", "--data-dir", dir, "--from", ref, "--insecure"); code != 0 {
		t.Fatalf("build without --start: exit %d: %s", code, errOut)
	}
	code, out, errOut := sbx(t, "template", "list", "--data-dir", dir, "--json")
	var list []template.Template
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 || list[0].StartCmd != start || list[1].StartCmd != "" {
		t.Fatalf("list --json: exit %d %s\n%s", code, errOut, out)
	}
	_, out, _ = sbx(t, "template", "list", "--data-dir", dir)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "START") ||
		!strings.Contains(lines[1], `"cd /app\npython3 -m http.server 8000"`) || !strings.HasSuffix(lines[2], " -") {
		t.Errorf("list:\n%s", out)
	}

	code, out, errOut = sbx(t, "template", "build", "bad", "--data-dir", dir, "--from", ref, "--insecure", "--start", "sleep\x001")
	if code != 2 || out != "" || !strings.Contains(errOut, "--start") || !strings.Contains(errOut, "NUL") {
		t.Errorf("a NUL in --start: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := sbx(t, "template", "build", "bad", "--data-dir", dir, "--start"); code != 2 {
		t.Errorf("--start without a value: exit %d, stderr %q", code, errOut)
	}

	// --from-template shares another template's root with a start command of its own.
	if code, _, errOut := sbx(t, "template", "build", "web", "--data-dir", dir, "--from-template", "image", "--start", "./serve"); code != 0 {
		t.Fatalf("build --from-template: exit %d: %s", code, errOut)
	}
	_, out, _ = sbx(t, "template", "list", "--data-dir", dir, "--json")
	if json.Unmarshal([]byte(out), &list) != nil || len(list) != 3 || list[2].Name != "web" || list[2].StartCmd != "./serve" {
		t.Errorf("list after --from-template:\n%s", out)
	}
	if code, _, errOut := sbx(t, "template", "build", "x", "--data-dir", dir, "--from-template", "image", "--from", ref); code != 2 || !strings.Contains(errOut, "not both") {
		t.Errorf("--from with --from-template: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := sbx(t, "template", "build", "x", "--data-dir", dir, "--from-template", "nope"); code == 0 || !strings.Contains(errOut, "not built") {
		t.Errorf("--from-template of a missing template: exit %d, stderr %q", code, errOut)
	}

	// --egress… gives its sandboxes a default egress policy, checked.
	if code, _, errOut := sbx(t, "template", "build", "locked", "--data-dir", dir, "--from-template", "image", "--egress-allow", "PyPI.org,203.0.113.7"); code != 0 {
		t.Fatalf("build --egress-allow: exit %d: %s", code, errOut)
	}
	_, out, _ = sbx(t, "template", "list", "--data-dir", dir, "--json")
	if json.Unmarshal([]byte(out), &list) != nil || len(list) != 4 || list[2].Name != "locked" || list[2].Egress == nil ||
		!list[2].Egress.Equal(sbxpkg.Egress{Mode: sbxpkg.EgressAllow, Allow: []string{"pypi.org", "203.0.113.7/32"}}) {
		t.Errorf("list after --egress-allow:\n%s", out)
	}
	if code, _, errOut := sbx(t, "template", "build", "x", "--data-dir", dir, "--from-template", "image", "--egress", "allow", "--egress-allow", "10.0.0.1"); code != 2 || !strings.Contains(errOut, "10.0.0.1/32 is within 10.0.0.0/8 (private)") {
		t.Errorf("a private --egress-allow: exit %d, stderr %q", code, errOut)
	}
}
