package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// `sbx runtime`: a project's durable environment, one verb per file. A
// verb acts on the runtime its argument names, or without one on the
// runtime of the API key's project (scope.runtimeOf), in the org and
// workspace of the key (or of --org and --workspace).

func newRuntime(g *globals) *cobra.Command {
	var s scope
	cmd := group(&cobra.Command{Use: "runtime", Aliases: []string{"runtimes", "rt"}, Short: "List, start, pause, resume, reset and keep alive the runtimes of a workspace"},
		newRuntimeList(g, &s), newRuntimeGet(g, &s), newRuntimeSet(g, &s), newRuntimeStart(g, &s), newRuntimePause(g, &s),
		newRuntimeResume(g, &s), newRuntimeReset(g, &s), newRuntimeKeepalive(g, &s))
	s.orgFlag(cmd)
	s.workspaceFlag(cmd)
	return cmd
}

// runtimeRef is a runtime a verb acts on.
type runtimeRef struct{ org, workspace, id string }

// runtimeOf is the runtime id names, or without one the runtime of the API
// key's project (of the workspace's project named default when the
// workspace is not the key's), in the org and workspace the scope resolves.
func (s *scope) runtimeOf(ctx context.Context, c *client.Client, id string) (runtimeRef, error) {
	if id != "" {
		org, ws, err := s.resolve(ctx, c)
		return runtimeRef{org, ws, id}, err
	}
	me, err := c.Me(ctx)
	if err != nil {
		return runtimeRef{}, err
	}
	org, ws, err := s.resolveWith(me)
	if err != nil {
		return runtimeRef{}, err
	}
	project := func(p apiv1.Project) bool { return p.Name == "default" }
	what := "the project named default"
	if (org == me.Org.ID || org == me.Org.Name) && (ws == me.Workspace.ID || ws == me.Workspace.Name) {
		project = func(p apiv1.Project) bool { return p.ID == me.Project.ID }
		what = "the API key's project " + me.Project.Name
	}
	cursor := ""
	for {
		list, err := c.Projects(ctx, org, ws, client.Page{Cursor: cursor})
		if err != nil {
			return runtimeRef{}, err
		}
		for _, p := range list.Items {
			if project(p) && p.RuntimeID != "" {
				return runtimeRef{org, ws, p.RuntimeID}, nil
			}
		}
		if cursor = list.NextCursor; cursor == "" {
			return runtimeRef{}, usagef("no runtime of %s in workspace %s: name one", what, ws)
		}
	}
}

// runtimeVerb is a verb that takes an optional RUNTIME and prints the
// runtime it answers.
func runtimeVerb(g *globals, s *scope, use, short string, act func(context.Context, *client.Client, runtimeRef) (*apiv1.Runtime, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use + " [RUNTIME]",
		Short: short,
		Args:  cobra.MaximumNArgs(1),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			ref, err := s.runtimeOf(ctx, c, firstArg(args))
			if err != nil {
				return err
			}
			rt, err := act(ctx, c, ref)
			if err != nil {
				return err
			}
			return g.show(rt, func(w io.Writer) error { return runtimeLine(w, rt) })
		}),
	}
}

// firstArg is args' first, or "".
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// runtimeLine is a runtime in one line: its ID, status and sandbox.
func runtimeLine(w io.Writer, rt *apiv1.Runtime) error {
	line := rt.ID + " " + rt.Status
	if sb := rt.Sandbox; sb != nil {
		line += ", sandbox " + sb.SandboxID + " " + stateText(sb)
		if sb.State == "running" && sb.ExpiresAt != nil {
			line += ", expires " + stampPtr(sb.ExpiresAt)
		}
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// runtimeDetail writes every field of a runtime, then its sandbox's.
func runtimeDetail(w io.Writer, rt *apiv1.Runtime) error {
	c := rt.Config
	resources := "server defaults"
	if c.CPU > 0 || c.MemoryMB > 0 {
		resources = fmt.Sprintf("%s vCPU, %s MB memory", orDefault(fmt.Sprint(c.CPU), c.CPU > 0), orDefault(fmt.Sprint(c.MemoryMB), c.MemoryMB > 0))
	}
	timeout := "server default"
	if c.Timeout > 0 {
		timeout = fmt.Sprintf("%ds", c.Timeout)
	}
	ports := make([]string, len(c.Ports))
	for i, p := range c.Ports {
		ports[i] = fmt.Sprint(p)
	}
	err := fields(w, []field{
		{"Runtime ID", rt.ID}, {"Status", rt.Status}, {"Project", rt.ProjectID}, {"Workspace", rt.WorkspaceID},
		{"Template", c.TemplateID}, {"Resources", resources}, {"Timeout", timeout}, {"Ports", strings.Join(ports, ", ")},
		{"Env", strings.Join(slices.Sorted(maps.Keys(c.Env)), ", ")}, {"Labels", pairs(c.Labels)}, {"Egress", orDefault(egressText(c.Egress), c.Egress != nil)},
		{"Created", stamp(rt.CreatedAt)}, {"Updated", stamp(rt.UpdatedAt)},
	})
	if err != nil || rt.Sandbox == nil {
		return err
	}
	if _, err := fmt.Fprintln(w, "\nSandbox:"); err != nil {
		return err
	}
	return sandboxDetail(w, rt.Sandbox)
}

// orDefault is s, or "default" when set is false.
func orDefault(s string, set bool) string {
	if set {
		return s
	}
	return "default"
}
