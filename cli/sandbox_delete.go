package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxDelete is `sbx sandbox delete ID --yes`.
func newSandboxDelete(g *globals) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete ID --yes",
		Short: "Kill a sandbox for good; its ledger row stays for audit and billing",
		Args:  args("ID"),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				return usagef("not deleting sandbox %s: deleting kills its compute and cannot be undone; "+
					"run `%s %s --yes` to go ahead", args[0], cmd.CommandPath(), args[0])
			}
			return nil
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showSandbox(c.Delete(ctx, args[0]))
		}),
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "really delete")
	return cmd
}
