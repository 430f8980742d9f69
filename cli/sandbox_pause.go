package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxPause is `sbx sandbox pause ID`.
func newSandboxPause(g *globals) *cobra.Command {
	var hibernate bool
	cmd := &cobra.Command{
		Use:   "pause ID",
		Short: "Pause a running sandbox; credits stop accruing for its compute",
		Long: "Pause a running sandbox. By default its processes are frozen and its memory kept;\n" +
			"with --hibernate its memory and processes are checkpointed to disk and released.\n" +
			"`sbx sandbox resume` continues it either way.",
		Args: args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			if hibernate {
				return g.showSandbox(c.Hibernate(ctx, args[0]))
			}
			return g.showSandbox(c.Pause(ctx, args[0]))
		}),
	}
	cmd.Flags().BoolVar(&hibernate, "hibernate", false, "checkpoint to disk and release memory (also for a paused sandbox)")
	return cmd
}
