package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newOrgPlan is `sbx org plan ORG`.
func newOrgPlan(g *globals) *cobra.Command {
	var p planFlags
	cmd := &cobra.Command{
		Use:   "plan ORG",
		Short: "Replace an org's plan: every limit not given is no limit",
		Long: "Replace an org's plan. Compute limits apply from the next create or resume, the disk limit from the next create; the member limit at once: " +
			"the sandboxes of a workspace over it pause, and those it paused resume where a workspace is back within it.",
		Example: "  sbx org plan acme --plan-name team --max-sandboxes 10 --max-vcpu 16 --max-memory-mb 32768 --max-disk-mb 102400 --max-members 5 --max-timeout 4h",
		Args:    args("ORG"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			ch, err := c.SetPlan(ctx, args[0], p.plan())
			if err != nil {
				return err
			}
			return g.show(ch, func(w io.Writer) error {
				fmt.Fprintf(w, "org %s: %s\n", ch.Org.Name, planText(ch.Org.Plan))
				if len(ch.Paused) > 0 {
					fmt.Fprintf(w, "paused (member_limit_exceeded): %s\n", strings.Join(ch.Paused, " "))
				}
				if len(ch.Resumed) > 0 {
					fmt.Fprintf(w, "resumed: %s\n", strings.Join(ch.Resumed, " "))
				}
				return nil
			})
		}),
	}
	p.add(cmd)
	return cmd
}
