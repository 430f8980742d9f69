package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newFilesWatch is `sbx files watch ID PATH`.
func newFilesWatch(g *globals) *cobra.Command {
	var recursive bool
	cmd := &cobra.Command{
		Use:   "watch ID PATH",
		Short: "Print changes under a path as they happen, until interrupted",
		Long:  "Print changes under a path as they happen, one a line (a JSON object a line with --json), until interrupted.",
		Args:  args("ID", "PATH"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			enc := json.NewEncoder(g.opts.Stdout)
			w, err := c.Files(args[0]).Watch(ctx, args[1], recursive, func(e apiv1.FileEvent) {
				if g.json {
					enc.Encode(e)
				} else {
					fmt.Fprintf(g.opts.Stdout, "%s %-6s %s\n", stamp(e.At), e.Type, e.Path)
				}
			})
			if err != nil {
				return err
			}
			if err := w.Wait(); ctx.Err() == nil {
				return err
			}
			return nil // interrupted, as meant
		}),
	}
	cmd.Flags().BoolVarP(&recursive, "recursive", "r", false, "watch subdirectories too")
	return cmd
}
