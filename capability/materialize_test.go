package capability_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/capability"
)

// dirSandbox is a sandbox whose file system is a directory of the host: an
// absolute path p of the sandbox is root+p, and scripts run in /bin/sh on
// the host with the sandbox's paths in their environment mapped the same way.
type dirSandbox struct {
	root    string
	failing string // WriteFile fails for paths with this prefix
	runs    []string
}

func (d *dirSandbox) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	if !filepath.IsAbs(path) {
		return errors.New("not an absolute path: " + path)
	}
	if d.failing != "" && strings.HasPrefix(path, d.failing) {
		return errors.New("no space left on device")
	}
	full := filepath.Join(d.root, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(full, data, mode); err != nil {
		return err
	}
	return os.Chmod(full, mode)
}

func (d *dirSandbox) Run(ctx context.Context, script string, env map[string]string, timeout time.Duration) (int, string, error) {
	d.runs = append(d.runs, script)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
	cmd.Env = os.Environ()
	for k, v := range env {
		if strings.HasPrefix(v, "/opt/sbx/") {
			v = filepath.Join(d.root, v)
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out), nil
	}
	return 0, string(out), err
}

func (d *dirSandbox) read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(d.root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func (d *dirSandbox) mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	st, err := os.Stat(filepath.Join(d.root, path))
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

const depsManifest = `schema: 1
name: deps
version: 2.0.0
description: Dependencies of every kind.
flags: {heavy: {default: false, description: A dependency behind a flag.}}
env: {DEPS_MODE: test}
tools: [{name: hello, path: hello}]
dependencies:
  - {name: present, check: "true", install: "echo never >&2; exit 1"}
  - {name: installable, check: "test -f installed.txt", install: "echo \"$SBX_CAPABILITY_NAME $DEPS_MODE $DEMO\" > installed.txt"}
  - {name: broken, check: "false", install: "echo 'E: Unable to locate package nope' >&2; exit 100"}
  - {name: unfixable, check: "echo missing; exit 3"}
  - {name: gated, check: "false", install: "exit 1", when: heavy}
`

func TestMaterialize(t *testing.T) {
	git, err := capability.CatalogBundle("git-toolkit", "")
	if err != nil {
		t.Fatal(err)
	}
	deps := bundleOf(t, depsManifest, map[string]string{"hello": "#!/bin/sh\necho hello\n"})
	r := capability.Resolve([]capability.Item{
		{Binding: binding("demo", "1.2.3", true, nil), Bundle: demoBundle(t)},
		{Binding: binding("deps", "2.0.0", true, nil), Bundle: deps},
		{Binding: sbx.CapabilityBinding{ID: "b-git", Name: "git-toolkit", Version: "1.0.0", Source: sbx.CapabilityCatalog, Enabled: true}, Bundle: git},
	})
	sb := &dirSandbox{root: t.TempDir()}
	t.Setenv("DEMO", "sandbox's") // the sandbox's own env wins over the resolved env, for scripts too
	var reported []capability.Step
	steps, err := capability.Materialize(context.Background(), sb, r, func(st capability.Step) {
		// Four writes come first (three capabilities and the resolved set);
		// then each script's step comes as soon as it ran.
		if st.Action != "write" && len(sb.runs) != len(reported)-4+1 {
			t.Errorf("step %s reported after %d runs", st, len(sb.runs))
		}
		reported = append(reported, st)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(reported, steps) {
		t.Errorf("reported %v, answered %v", reported, steps)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.String())
	}
	want := []string{
		"demo: write ok: demo 1.2.3: 6 files",
		"deps: write ok: deps 2.0.0: 2 files",
		"git-toolkit: write ok: git-toolkit 1.0.0: 4 files",
		"capabilities: write ok: resolved set of 3 capabilities (2 tools, 2 skills, 2 MCP servers, 2 prompts, 1 conflicts) to /opt/sbx/capabilities/resolved.json",
		"demo: check ok: sh: ok",
		"deps: check ok: present: ok",
		"deps: check failed: installable: exit 1: no output",
		"deps: install ok: installable: ok",
		"deps: check ok: installable after install: ok",
		"deps: check failed: broken: exit 1: no output",
		"deps: install failed: broken: exit 100: E: Unable to locate package nope",
		"deps: check failed: broken after install: exit 1: no output",
		"deps: check failed: unfixable: exit 3: missing (it has no install script)",
		"git-toolkit: check ok: git: ok",
	}
	if len(got) != len(want) {
		t.Fatalf("steps:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("step %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}

	// The files, with tools executable whatever their mode in the bundle.
	if sb.read(t, "/opt/sbx/capabilities/demo/skills/demo/SKILL.md") != "# Demo\n" || sb.mode(t, "/opt/sbx/capabilities/demo/tools/extra") != 0o755 ||
		sb.mode(t, "/opt/sbx/capabilities/demo/prompts/reviewer.md") != 0o644 || sb.mode(t, "/opt/sbx/capabilities/git-toolkit/tools/git-summary") != 0o755 ||
		!strings.Contains(sb.read(t, "/opt/sbx/capabilities/git-toolkit/capability.yaml"), "name: git-toolkit") {
		t.Fatal("capability files not as in their bundles")
	}
	if got := sb.read(t, "/opt/sbx/capabilities/deps/installed.txt"); got != "deps test sandbox's\n" {
		t.Fatalf("the install ran in the capability's directory with its name and the resolved env: %q", got)
	}
	if got := sb.read(t, "/opt/sbx/bin/git-summary"); !strings.Contains(got, "exec '/opt/sbx/capabilities/git-toolkit/tools/git-summary' \"$@\"") ||
		sb.mode(t, "/opt/sbx/bin/git-summary") != 0o755 {
		t.Fatalf("tool command: %s", got)
	}
	if got := sb.read(t, "/opt/sbx/bin/hello"); !strings.Contains(got, "'/opt/sbx/capabilities/demo/tools/hello'") {
		t.Fatalf("the tool both define is the first capability's: %s", got)
	}
	env := sb.read(t, capability.EnvFile)
	for _, line := range []string{`export PATH='/opt/sbx/bin'"${PATH:+:$PATH}"`, "export DEMO='1'", "export GIT_PAGER='cat'", "export DEPS_MODE='test'"} {
		if !strings.Contains(env, line+"\n") {
			t.Errorf("env.sh lacks %s:\n%s", line, env)
		}
	}
	// A variable the sandbox already has (the runtime's env, a secret) wins.
	sourced, err := exec.Command("/bin/sh", "-c", `DEMO=mine; export DEMO; unset DEPS_MODE; . "$1"; echo "$DEMO $DEPS_MODE"`, "sh", filepath.Join(sb.root, capability.EnvFile)).Output()
	if err != nil || string(sourced) != "mine test\n" {
		t.Errorf("sourcing env.sh: %q %v", sourced, err)
	}
	if !strings.Contains(sb.read(t, capability.ProfileFile), ". /opt/sbx/capabilities/env.sh") {
		t.Error("login shells do not source env.sh")
	}
	var inSandbox, view any
	json.Unmarshal([]byte(sb.read(t, capability.ResolvedFile)), &inSandbox)
	data, _ := json.Marshal(r)
	json.Unmarshal(data, &view)
	if inSandbox == nil || mustJSON(inSandbox) != mustJSON(view) {
		t.Fatalf("resolved.json is not the resolved view:\n%s\n%s", mustJSON(inSandbox), mustJSON(view))
	}
	for _, s := range sb.runs {
		if strings.Contains(s, "exit 1") && strings.Contains(s, "gated") {
			t.Fatal("a dependency behind a flag that is off ran")
		}
	}
}

// A capability whose files cannot be written fails its step; the others
// are still done. A context that ends stops materializing with its error.
func TestMaterializeFailures(t *testing.T) {
	deps := bundleOf(t, depsManifest, map[string]string{"hello": "echo"})
	r := capability.Resolve([]capability.Item{
		{Binding: binding("demo", "1.2.3", true, nil), Bundle: demoBundle(t)},
		{Binding: binding("deps", "2.0.0", true, nil), Bundle: deps},
	})
	sb := &dirSandbox{root: t.TempDir(), failing: "/opt/sbx/capabilities/demo/"}
	steps, err := capability.Materialize(context.Background(), sb, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := steps[0]; s.OK || s.Capability != "demo" || s.Action != "write" || !strings.Contains(s.Detail, "no space left on device") {
		t.Fatalf("failed write: %+v", s)
	}
	if s := steps[1]; !s.OK || s.Capability != "deps" {
		t.Fatalf("the next capability: %+v", s)
	}
	if s := steps[3]; s.OK || s.Action != "check" || !strings.Contains(s.Detail, "sh: exit 1") {
		t.Fatalf("demo's dependency, its directory missing: %+v", s)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := capability.Materialize(ctx, &dirSandbox{root: t.TempDir()}, r, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("a canceled context: %v", err)
	}
}

// A failed step's output is kept as text a timeline can hold: no NUL, valid
// UTF-8, cut between characters.
func TestFailedStepOutputIsText(t *testing.T) {
	bundle := bundleOf(t, `schema: 1
name: noisy
version: 1.0.0
description: Scripts that print what a timeline cannot hold.
dependencies:
  - {name: nul, check: "printf 'a\\000b'; exit 1"}
  - {name: wide, check: "i=0; while [ $i -lt 1500 ]; do printf 'é'; i=$((i+1)); done; printf '\\377'; exit 1"}
`, nil)
	r := capability.Resolve([]capability.Item{{Binding: binding("noisy", "1.0.0", true, nil), Bundle: bundle}})
	steps, err := capability.Materialize(context.Background(), &dirSandbox{root: t.TempDir()}, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps[len(steps)-2:] {
		if st.OK || strings.ContainsRune(st.Detail, 0) || !utf8.ValidString(st.Detail) {
			t.Errorf("step %q", st.Detail)
		}
	}
	if d := steps[len(steps)-2].Detail; !strings.Contains(d, "exit 1: ab (") {
		t.Errorf("NUL step %q", d)
	}
	if d := steps[len(steps)-1].Detail; !strings.Contains(d, "…éé") || strings.Count(d, "é") != 1000 {
		t.Errorf("wide step keeps %d characters: %.60q…", strings.Count(d, "é"), d)
	}
}
