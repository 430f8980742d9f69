package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxUsage is `sbx sandbox usage`: the org's usage per project.
func newSandboxUsage(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "usage",
		Short: "Sum the org's sandboxes per project: counts by state, running resources, credits",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			me, err := c.Me(ctx)
			if err != nil {
				return err
			}
			u, err := c.OrgUsage(ctx, me.Org.ID)
			if err != nil {
				return err
			}
			return g.show(u, func(w io.Writer) error {
				rows := make([][]string, 0, len(u.Projects)+1)
				for _, p := range u.Projects {
					rows = append(rows, usageRow(p.Project.Name, p.Usage))
				}
				rows = append(rows, usageRow("TOTAL", u.Total))
				return table(w, []string{"PROJECT", "SANDBOXES", "STARTING", "RUNNING", "PAUSED", "KILLED", "FAILED",
					"RUNNING VCPU", "RUNNING MEMORY MB", "LIFETIME", "BILLED CREDITS"}, rows)
			})
		}),
	}
}

func usageRow(name string, u apiv1.Usage) []string {
	n := func(state string) string { return fmt.Sprint(u.ByState[state]) }
	lifetime := (time.Duration(u.LifetimeSeconds * float64(time.Second))).Round(time.Second)
	return []string{name, fmt.Sprint(u.Sandboxes), n("starting"), n("running"), n("paused"), n("killed"), n("failed"),
		fmt.Sprintf("%g", u.RunningCPU), fmt.Sprint(u.RunningMemoryMB), lifetime.String(), u.BilledCredits}
}
