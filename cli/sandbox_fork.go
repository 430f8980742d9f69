package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxFork is `sbx sandbox fork ID`.
func newSandboxFork(g *globals) *cobra.Command {
	var count int
	cmd := &cobra.Command{
		Use:   "fork ID",
		Short: "Make running children of a running sandbox, each with its memory, processes and files",
		Long: "Make --count children of a running sandbox. Each is a sandbox of its own (ID, address, access\n" +
			"token) with the parent's memory, processes, files, env and metadata; the parent goes on. Their IDs\n" +
			"are printed one a line; children that could not be made are reported, and the exit status is 1.",
		Args: args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			res, err := c.Fork(ctx, args[0], count)
			if err != nil {
				return err
			}
			if err := g.show(res, func(w io.Writer) error {
				for _, ch := range res.Children {
					fmt.Fprintln(w, ch.SandboxID)
				}
				return nil
			}); err != nil {
				return err
			}
			for _, e := range res.Errors {
				fmt.Fprintln(g.opts.Stderr, "sbx: "+e)
			}
			if len(res.Errors) > 0 {
				return &exitError{code: 1}
			}
			return nil
		}),
	}
	cmd.Flags().IntVar(&count, "count", 1, "how many children")
	return cmd
}
