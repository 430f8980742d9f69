package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxLogs is `sbx sandbox logs ID`.
func newSandboxLogs(g *globals) *cobra.Command {
	var limit int
	var cursor string
	var all bool
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Print a sandbox's log, oldest first",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			lines, next, err := pages(cursor, all, func(cursor string) ([]apiv1.LogLine, string, error) {
				p, err := c.Logs(ctx, args[0], cursor, limit)
				if err != nil {
					return nil, "", err
				}
				return p.Items, p.NextCursor, nil
			})
			if err != nil {
				return err
			}
			return g.showPage(&apiv1.LogPage{Items: lines, NextCursor: next}, next, func(w io.Writer) error {
				for _, l := range lines {
					if _, err := fmt.Fprintf(w, "%s %s %s\n", stamp(l.At), l.Source, l.Line); err != nil {
						return err
					}
				}
				return nil
			})
		}),
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", 0, "lines per page, 1 to 1000 (default: the server's, 100)")
	f.StringVar(&cursor, "cursor", "", "start at this page, as a previous call printed it")
	f.BoolVar(&all, "all", false, "follow cursors to print every page")
	return cmd
}
