package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxLogs is `sbx sandbox logs ID`.
func newSandboxLogs(g *globals) *cobra.Command {
	var limit int
	var cursor string
	var all, follow bool
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Print a sandbox's log, oldest first; with --follow, then each new line until the sandbox ends",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			if follow {
				if cursor != "" || all || limit != 0 {
					return usagef("--follow prints the whole log and follows it: it takes no --cursor, --all or --limit")
				}
				return g.followLogs(ctx, c, args[0])
			}
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
					if err := logLine(w, l); err != nil {
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
	f.BoolVarP(&follow, "follow", "f", false, "print the whole log, then each line as it comes, until the sandbox ends (or Ctrl-C); with --json, one JSON object per line")
	return cmd
}

// followLogs prints a sandbox's log as it grows, until the sandbox ends or
// an interrupt (exit 0), or the stream breaks (an error).
func (g *globals) followLogs(ctx context.Context, c *client.Client, id string) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := g.opts.Stdout
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	err := c.FollowLogs(ctx, id, func(l apiv1.LogLine) error {
		if g.json {
			return enc.Encode(l)
		}
		return logLine(w, l)
	})
	if ctx.Err() != nil {
		return nil // interrupted, as meant
	}
	return err
}

// logLine prints one line of a log as a human reads it.
func logLine(w io.Writer, l apiv1.LogLine) error {
	_, err := fmt.Fprintf(w, "%s %s %s\n", stamp(l.At), l.Source, l.Line)
	return err
}
