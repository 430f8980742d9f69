package cli

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newRuntimeGet is `sbx runtime get [RUNTIME]`.
func newRuntimeGet(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:   "get [RUNTIME]",
		Short: "Show a runtime: status, configuration, and its sandbox's state and credits",
		Args:  cobra.MaximumNArgs(1),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			ref, err := s.runtimeOf(ctx, c, firstArg(args))
			if err != nil {
				return err
			}
			rt, err := c.Runtime(ctx, ref.org, ref.workspace, ref.id)
			if err != nil {
				return err
			}
			return g.show(rt, func(w io.Writer) error { return runtimeDetail(w, rt) })
		}),
	}
}
