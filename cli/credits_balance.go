package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCreditsBalance is `sbx credits balance`: the org's balance and its
// newest settlements.
func newCreditsBalance(g *globals) *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "balance",
		Short: "Show the org's credits left and its newest settlements",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			if limit < 1 || limit > 1000 {
				return usagef("--limit %d: want 1 to 1000", limit)
			}
			org, err := (&scope{}).orgOf(ctx, c)
			if err != nil {
				return err
			}
			cr, err := c.Credits(ctx, org, limit)
			if err != nil {
				return err
			}
			return g.show(cr, func(w io.Writer) error {
				fmt.Fprintf(w, "org %s: %s credits left\n\n", cr.Org.Name, cr.Balance)
				rows := make([][]string, 0, len(cr.Settlements))
				for _, st := range cr.Settlements {
					rows = append(rows, []string{st.To.Format(time.RFC3339), st.SandboxID, st.State,
						st.To.Sub(st.From).Round(time.Millisecond).String(), st.Credits, st.BalanceAfter})
				}
				return table(w, []string{"AT", "SANDBOX", "STATE", "INTERVAL", "CREDITS", "BALANCE AFTER"}, rows)
			})
		}),
	}
	cmd.Flags().IntVar(&limit, "limit", 20, "how many settlements to show, 1 to 1000")
	return cmd
}
