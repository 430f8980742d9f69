package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCreditsSpending is `sbx credits spending`: where the org's credits went
// over a time range.
func newCreditsSpending(g *globals) *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "spending",
		Short: "Break down what the org spent over a time range: by resource, project, kind, provider and sandbox",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			f, err := flagTime("--from", from)
			if err != nil {
				return err
			}
			t, err := flagTime("--to", to)
			if err != nil {
				return err
			}
			org, err := (&scope{}).orgOf(ctx, c)
			if err != nil {
				return err
			}
			sp, err := c.Spending(ctx, org, f, t)
			if err != nil {
				return err
			}
			return g.show(sp, func(w io.Writer) error {
				fmt.Fprintf(w, "org %s spent %s credits from %s to %s\n", sp.Org.Name, sp.Total,
					sp.From.Format(time.RFC3339), sp.To.Format(time.RFC3339))
				r := sp.ByResource
				fmt.Fprintf(w, "by resource: cpu %s, memory %s, gpu %s, paused storage %s, snapshots %s, volumes %s\n", r.CPU, r.Memory, r.GPU, r.PausedStorage, r.Snapshots, r.Volumes)
				for _, by := range []struct {
					name string
					m    map[string]string
				}{{"kind", sp.ByKind}, {"provider", sp.ByProvider}} {
					keys := make([]string, 0, len(by.m))
					for k := range by.m {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					fmt.Fprintf(w, "by %s:", by.name)
					for _, k := range keys {
						fmt.Fprintf(w, " %s %s", k, by.m[k])
					}
					fmt.Fprintln(w)
				}
				for _, p := range sp.ByProject {
					fmt.Fprintf(w, "project %s: %s\n", p.Project.Name, p.Credits)
				}
				fmt.Fprintln(w)
				rows := make([][]string, 0, len(sp.Sandboxes))
				for _, s := range sp.Sandboxes {
					rows = append(rows, []string{s.SandboxID, s.Kind, s.Provider, s.Resources.CPU, s.Resources.Memory,
						s.Resources.GPU, s.Resources.PausedStorage, s.Credits})
				}
				return table(w, []string{"SANDBOX", "KIND", "PROVIDER", "CPU", "MEMORY", "GPU", "PAUSED STORAGE", "TOTAL"}, rows)
			})
		}),
	}
	cmd.Flags().StringVar(&from, "from", "", "start of the range, RFC 3339 (default: 30 days before --to)")
	cmd.Flags().StringVar(&to, "to", "", "end of the range, RFC 3339 (default: now)")
	return cmd
}

// flagTime reads an optional RFC 3339 flag value.
func flagTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, usagef("%s %q: want an RFC 3339 time like 2026-01-02T15:04:05Z", name, v)
	}
	return t, nil
}
