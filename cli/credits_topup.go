package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCreditsTopUp is `sbx credits top-up ORG CREDITS`, with the operator's key.
func newCreditsTopUp(g *globals) *cobra.Command {
	var note string
	cmd := &cobra.Command{
		Use:     "top-up ORG CREDITS",
		Short:   "Add credits to an org's balance (the operator's key); its sandboxes paused for lack of credits can resume",
		Example: "  sbx credits top-up default 250.5 --note 'invoice 42'",
		Args:    args("ORG", "CREDITS"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, a []string) error {
			b, err := c.TopUp(ctx, a[0], a[1], note)
			if err != nil {
				return err
			}
			return g.show(b, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "org %s: %s credits left\n", b.Org.Name, b.Balance)
				return err
			})
		}),
	}
	cmd.Flags().StringVar(&note, "note", "", "why, kept with the top-up")
	return cmd
}
