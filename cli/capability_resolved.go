package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilityResolved is `sbx capability resolved`: the merged set.
func newCapabilityResolved(g *globals, s *capabilityScope) *cobra.Command {
	return &cobra.Command{
		Use:   "resolved",
		Short: "Show the merged set of the runtime's enabled capabilities, with conflicts: what its sandboxes get",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			org, ws, rt, err := s.target(ctx, c)
			if err != nil {
				return err
			}
			r, err := c.ResolvedCapabilities(ctx, org, ws, rt)
			if err != nil {
				return err
			}
			return g.show(r, func(w io.Writer) error { return resolvedText(w, rt, r) })
		}),
	}
}

func resolvedText(w io.Writer, runtime string, r *apiv1.ResolvedCapabilities) error {
	fmt.Fprintf(w, "runtime %s: %d enabled capabilities, under %s\n", runtime, len(r.Capabilities), r.Root)
	if len(r.Capabilities) == 0 {
		return nil
	}
	rows := make([][]string, len(r.Capabilities))
	for i, c := range r.Capabilities {
		rows[i] = []string{c.Name, c.Version, c.Source, flagsText(c.Flags)}
	}
	fmt.Fprintln(w)
	if err := table(w, []string{"CAPABILITY", "VERSION", "SOURCE", "FLAGS"}, rows); err != nil {
		return err
	}
	section := func(title string, lines []string) {
		if len(lines) > 0 {
			fmt.Fprintf(w, "\n%s:\n  %s\n", title, strings.Join(lines, "\n  "))
		}
	}
	var lines []string
	for _, t := range r.Tools {
		lines = append(lines, fmt.Sprintf("%s (%s): %s", t.Name, t.Capability, t.Path))
	}
	section("tools", lines)
	lines = nil
	for _, sk := range r.Skills {
		lines = append(lines, fmt.Sprintf("%s (%s): %s", sk.Name, sk.Capability, sk.Path))
	}
	section("skills", lines)
	lines = nil
	for _, m := range r.MCPServers {
		how := m.URL
		if m.Transport == "stdio" {
			how = strings.Join(append([]string{m.Command}, m.Args...), " ")
		}
		lines = append(lines, fmt.Sprintf("%s (%s): %s %s", m.Name, m.Capability, m.Transport, how))
	}
	section("MCP servers", lines)
	lines = nil
	for _, p := range r.Prompts {
		lines = append(lines, fmt.Sprintf("%s (%s): %s", p.Name, p.Capability, p.Path))
	}
	section("prompts", lines)
	lines = nil
	for _, d := range r.Dependencies {
		lines = append(lines, fmt.Sprintf("%s (%s): check %s", d.Name, d.Capability, d.Check))
	}
	section("dependencies", lines)
	lines = nil
	for k, v := range r.Env {
		lines = append(lines, k+"="+v)
	}
	sort.Strings(lines)
	section("env", lines)
	lines = nil
	for _, c := range r.Conflicts {
		lines = append(lines, c.Detail)
	}
	if len(lines) == 0 {
		lines = []string{"none"}
	}
	section("conflicts", lines)
	return nil
}
