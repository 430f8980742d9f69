package local

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testenv"
	"github.com/sbxdev/sbx/template"
)

// The agent is the sandbox's first process, reading its token on a
// descriptor (never in the spec), with the template's default user; a
// template's start command reaches it as one argument, whatever it holds;
// no start command or user, no flag. (It starts no sandbox, but runs under
// the package's TestMain like the rest.)
func TestWithAgentArgs(t *testing.T) {
	for _, c := range []struct{ start, user string }{{"", ""}, {"python3 -m http.server 8000", "user"}, {"--odd 'quoted' $HOME\nsecond line", "1000:100"}} {
		s := OCISpec(sbx.Spec{ProviderSandboxID: "sbx-spec", Env: map[string]string{"GREETING": "hi"}}, "/rootfs", nil, "/sbx/sbx-spec", "", nil)
		withAgent(s, "/data/agent/sbx-0123", template.Template{StartCmd: c.start, User: c.user})
		want := []string{AgentMount, "agent", "--port", "49983", "--token-fd", "3"}
		if c.user != "" {
			want = append(want, "--user", c.user)
		}
		if c.start != "" {
			want = append(want, "--start", c.start)
		}
		if !slices.Equal(s.Process.Args, want) {
			t.Errorf("start %q: args %q, want %q", c.start, s.Process.Args, want)
		}
		if slices.ContainsFunc(s.Process.Env, func(kv string) bool { return strings.HasPrefix(kv, sbx.AccessTokenEnv+"=") }) {
			t.Errorf("start %q: a token in the env %q", c.start, s.Process.Env)
		}
		for _, cap := range []string{"CAP_SETUID", "CAP_SETGID"} {
			if !slices.Contains(s.Process.Capabilities.Bounding, cap) || !s.Process.NoNewPrivileges {
				t.Errorf("the agent cannot start commands as other users: %+v", s.Process)
			}
		}
		mount := specs.Mount{Destination: AgentMount, Type: "bind", Source: "/data/agent/sbx-0123", Options: []string{"bind", "ro"}}
		if !slices.ContainsFunc(s.Mounts, func(m specs.Mount) bool {
			return m.Destination == mount.Destination && m.Source == mount.Source && slices.Equal(m.Options, mount.Options)
		}) {
			t.Errorf("start %q: the agent is not mounted read-only: %+v", c.start, s.Mounts)
		}
	}
}

// When the provider opens, copies of earlier agent binaries go, except one
// a sandbox's bundle still names (a hibernated sandbox wakes with it).
func TestOldAgentCopiesGo(t *testing.T) {
	dir := t.TempDir()
	agents := filepath.Join(dir, "agent")
	kept, unused := filepath.Join(agents, "sbx-00000000000000a1"), filepath.Join(agents, "sbx-00000000000000a2")
	bundle := filepath.Join(dir, "sandboxes", "sbx-hibernated", "bundle")
	for _, d := range []string{agents, bundle} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{kept, unused} {
		os.WriteFile(f, []byte("an older sbx"), 0o555)
	}
	s := OCISpec(sbx.Spec{ProviderSandboxID: "sbx-hibernated"}, "/rootfs", nil, "/sbx/sbx-hibernated", "", nil)
	withAgent(s, kept, template.Template{})
	data, _ := json.Marshal(s)
	os.WriteFile(filepath.Join(bundle, "config.json"), data, 0o600)
	src := filepath.Join(dir, "sbx-new")
	os.WriteFile(src, []byte("this sbx"), 0o755)

	p, err := New(Config{DataDir: dir, Runsc: os.Getenv("SBX_RUNSC"), Templates: templates, Agent: src, CgroupParent: testenv.NewInstance(t).Name})
	if err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(agents, "sbx-*"))
	if want := []string{kept, unused}; !slices.Contains(left, kept) || slices.Contains(left, unused) || !slices.Contains(left, p.agent) || len(left) != 2 {
		t.Errorf("agent copies left: %v (had %v and this one)", left, want)
	}
}
