package cli

import (
	"context"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxResume is `sbx sandbox resume ID`.
func newSandboxResume(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Resume a paused sandbox",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showSandbox(c.Resume(ctx, args[0], timeout))
		}),
	}
	cmd.Flags().Var(durationValue{&timeout}, "timeout", "new timeout from now, in seconds or as 1h (default: keep the sandbox's)")
	return cmd
}
