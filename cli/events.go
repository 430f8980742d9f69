package cli

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newEvents is `sbx events [--follow] [--after N] [--type T]… [--sandbox ID]
// [--project ID]`: the org's event log, as the key sees it; with --follow,
// every new event as it commits, until an interrupt. With --json, one JSON
// event a line.
func newEvents(g *globals) *cobra.Command {
	var q client.EventQuery
	var follow bool
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print the org's events (state changes, timeline steps, credit events) after an ID; --follow to keep following",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			if follow {
				ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				return c.FollowEvents(ctx, q, func(e apiv1.OrgEvent) error { return g.printEvent(e) })
			}
			page, err := c.Events(ctx, q)
			if err != nil {
				return err
			}
			for _, e := range page.Items {
				if err := g.printEvent(e); err != nil {
					return err
				}
			}
			if !g.json && len(page.Items) > 0 {
				_, err = fmt.Fprintf(g.opts.Stderr, "more: run again with --after %d\n", page.Next)
			}
			return err
		}),
	}
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "keep following new events until interrupted")
	f.Int64Var(&q.After, "after", 0, "only the events after this ID")
	f.StringArrayVar(&q.Types, "type", nil, "only events of this type, or prefix such as sandbox.* (repeatable)")
	f.StringVar(&q.Sandbox, "sandbox", "", "only this sandbox's events")
	f.StringVar(&q.Project, "project", "", "only this project's events (its ID)")
	f.IntVar(&q.Limit, "limit", 0, "at most this many events per read (1 to 1000)")
	return cmd
}

// printEvent prints one event: a JSON line with --json, else a line of
// ID, time, type, subject and data.
func (g *globals) printEvent(e apiv1.OrgEvent) error {
	return g.show(e, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", e.ID, stamp(e.At), e.Type, orDash(e.Subject), e.Data)
		return err
	})
}
