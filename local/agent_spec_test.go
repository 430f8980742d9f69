package local

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
)

// The agent is the sandbox's first process, and a template's start command
// reaches it as one argument, whatever it holds; no start command, no flag.
// (It starts no sandbox, but runs under the package's TestMain like the rest.)
func TestWithAgentArgs(t *testing.T) {
	for _, start := range []string{"", "python3 -m http.server 8000", "--odd 'quoted' $HOME\nsecond line"} {
		s := OCISpec(sbx.Spec{ProviderSandboxID: "sbx-spec"}, "/rootfs", nil, "/sbx/sbx-spec", "", nil)
		withAgent(s, "/data/agent/sbx-0123", "token", start)
		want := []string{agentMount, "agent", "--port", "49983"}
		if start != "" {
			want = append(want, "--start", start)
		}
		if !slices.Equal(s.Process.Args, want) {
			t.Errorf("start %q: args %q, want %q", start, s.Process.Args, want)
		}
		if !slices.Contains(s.Process.Env, "SBX_ACCESS_TOKEN=token") {
			t.Errorf("start %q: no token in %q", start, s.Process.Env)
		}
		mount := specs.Mount{Destination: agentMount, Type: "bind", Source: "/data/agent/sbx-0123", Options: []string{"bind", "ro"}}
		if !slices.ContainsFunc(s.Mounts, func(m specs.Mount) bool {
			return m.Destination == mount.Destination && m.Source == mount.Source && slices.Equal(m.Options, mount.Options)
		}) {
			t.Errorf("start %q: the agent is not mounted read-only: %+v", start, s.Mounts)
		}
	}
}
