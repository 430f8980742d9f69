package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandbox is the `sbx sandbox` command group. Its verbs take the provider
// sandbox ID (the sbx UUID works too), one file per verb; this file holds
// what they share.
func newSandbox(g *globals) *cobra.Command {
	return group(&cobra.Command{Use: "sandbox", Aliases: []string{"sandboxes", "sb"}, Short: "Create, inspect and control sandboxes"},
		newSandboxCreate(g), newSandboxList(g), newSandboxGet(g), newSandboxLogs(g), newSandboxMetrics(g), newSandboxUsage(g),
		newSandboxDelete(g), newSandboxPause(g), newSandboxResume(g), newSandboxConnect(g),
		newSandboxRefresh(g), newSandboxTimeout(g), newSandboxURL(g), newSandboxSSH(g), newSandboxEgress(g), newSandboxDesktop(g),
		newSandboxSnapshot(g), newSandboxFork(g),
	)
}

// group makes cmd a command group of subs: run alone it prints its help,
// and an unknown verb is a usage error.
func group(cmd *cobra.Command, subs ...*cobra.Command) *cobra.Command {
	cmd.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unknown command %q for %s; see `%s --help`", args[0], cmd.CommandPath(), cmd.CommandPath())
		}
		return nil
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	cmd.SetFlagErrorFunc(flagUsage)
	cmd.AddCommand(subs...)
	return cmd
}

// apiRunE is the RunE of a verb that calls the API: fn gets a client for the
// server and key the command line names, and its errors come back explained.
func (g *globals) apiRunE(fn func(ctx context.Context, c *client.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, err := g.client()
		if err != nil {
			return err
		}
		return g.explain(fn(cmd.Context(), c, args))
	}
}

// show prints v as JSON with --json, else as human writes it.
func (g *globals) show(v any, human func(w io.Writer) error) error {
	if g.json {
		return printJSON(g.opts.Stdout, v)
	}
	return human(g.opts.Stdout)
}

// showSandbox prints the answer of an action on a sandbox: one status line.
func (g *globals) showSandbox(sb *apiv1.Sandbox, err error) error {
	if err != nil {
		return err
	}
	return g.show(sb, func(w io.Writer) error {
		line := sb.SandboxID + " " + stateText(sb)
		switch {
		case sb.EndedAt != nil:
			line += ", ended " + stampPtr(sb.EndedAt)
		case sb.State == "running" && sb.ExpiresAt != nil:
			line += ", expires " + stampPtr(sb.ExpiresAt)
		}
		_, err := fmt.Fprintln(w, line)
		return err
	})
}

// showPage prints a page with --json, else as human writes it followed, on
// stderr, by how to get the next page when there is one.
func (g *globals) showPage(v any, next string, human func(w io.Writer) error) error {
	if err := g.show(v, human); err != nil || g.json || next == "" {
		return err
	}
	_, err := fmt.Fprintf(g.opts.Stderr, "more: run again with --cursor %s, or with --all\n", next)
	return err
}

// pages fetches one page from cursor, or with all every page from there on,
// and returns their items and the cursor of the page after (empty after all).
func pages[T any](cursor string, all bool, fetch func(cursor string) ([]T, string, error)) ([]T, string, error) {
	items := []T{}
	for {
		got, next, err := fetch(cursor)
		if err != nil {
			return nil, "", err
		}
		items = append(items, got...)
		if !all || next == "" {
			return items, next, nil
		}
		if next == cursor {
			return nil, "", fmt.Errorf("the server answered the same cursor %q twice", next)
		}
		cursor = next
	}
}

// stateText is a sandbox's state with why it paused or ended.
func stateText(sb *apiv1.Sandbox) string {
	state := sb.State
	if sb.Hibernated {
		state += ", hibernated"
	}
	if r := reason(sb); r != "" {
		return state + " (" + r + ")"
	}
	return state
}

// reason is why a sandbox paused or ended, if it did.
func reason(sb *apiv1.Sandbox) string {
	if sb.EndReason != "" {
		return sb.EndReason
	}
	return sb.PauseReason
}

// sandboxDetail writes every field of a sandbox, its timeline last.
func sandboxDetail(w io.Writer, sb *apiv1.Sandbox) error {
	resources := fmt.Sprintf("%g vCPU, %d MB memory, %d MB disk", sb.CPU, sb.MemoryMB, sb.DiskMB)
	if sb.GPU != nil {
		resources += ", GPU " + gpuText(*sb.GPU)
	}
	err := fields(w, []field{
		{"Sandbox ID", sb.SandboxID}, {"UUID", sb.ID}, {"State", stateText(sb)},
		{"Template", sb.TemplateID}, {"Snapshot", sb.SnapshotID}, {"Forked from", sb.ForkedFrom},
		{"Kind", sb.Kind}, {"Provider", sb.Provider}, {"Project", sb.ProjectID},
		{"Created", stamp(sb.CreatedAt)}, {"Started", stampPtr(sb.StartedAt)}, {"Paused", stampPtr(sb.PausedAt)},
		{"Ended", stampPtr(sb.EndedAt)}, {"Expires", stampPtr(sb.ExpiresAt)},
		{"Timeout", secondsText(sb.Timeout)}, {"Auto-pause", strconv.FormatBool(sb.AutoPause)},
		{"Resources", resources}, {"Volumes", volumesText(sb.Volumes)}, {"Egress", egressText(sb.Egress)},
		{"Env vars", strings.Join(sb.EnvVarNames, ", ")}, {"Metadata", pairs(sb.Metadata)},
		{"Credits", fmt.Sprintf("%s billed, %s running, %s estimated total", sb.BilledCredits, sb.RunningCredits, sb.EstimatedTotalCredits)},
		{"Runtime URL", sb.RuntimeURL}, {"Access token", sb.AccessToken},
		{"Preview", previewText(sb)}, {"Preview URL", sb.PreviewURL}, {"Traffic token", sb.TrafficToken}, {"Ports", portsText(sb.Ports)},
		{"Diagnostic", sb.Diagnostic},
	})
	if err != nil || len(sb.Timeline) == 0 {
		return err
	}
	fmt.Fprintln(w, "Timeline:")
	rows := make([][]string, len(sb.Timeline))
	for i, e := range sb.Timeline {
		rows[i] = []string{"  " + stamp(e.At), e.Step, e.Detail}
	}
	return table(w, []string{"  AT", "STEP", "DETAIL"}, rows)
}

// previewText says who reaches a sandbox's previews and whether they wake it.
func previewText(sb *apiv1.Sandbox) string {
	p := sb.Preview
	s := p.Access + ", host " + p.Host
	if p.Wake != nil && !*p.Wake {
		s += ", traffic does not wake it"
	}
	return s
}

// portsText lists the ports a sandbox serves with their URLs.
func portsText(ports []apiv1.PortURL) string {
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = strconv.Itoa(p.Port)
		if p.URL != "" {
			out[i] += " " + p.URL
		}
	}
	return strings.Join(out, ", ")
}

// pairs renders a map as sorted key=value pairs.
func pairs(m map[string]string) string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// gpuText renders a GPU request as the --gpu flag takes it: TYPE:COUNT:FRACTION.
func gpuText(g apiv1.GPU) string {
	s := g.Type
	if g.Count > 1 || (g.Fraction != 0 && g.Fraction != 100) {
		s += ":" + strconv.Itoa(max(g.Count, 1))
	}
	if g.Fraction != 0 && g.Fraction != 100 {
		s += ":" + strconv.Itoa(g.Fraction)
	}
	return s
}

// volumesText lists a sandbox's volumes: NAME:PATH, with :ro when read-only.
func volumesText(vols []apiv1.VolumeMount) string {
	out := make([]string, len(vols))
	for i, v := range vols {
		out[i] = v.Name + ":" + v.Path
		if v.ReadOnly {
			out[i] += ":ro"
		}
	}
	return strings.Join(out, ", ")
}
