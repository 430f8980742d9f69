package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCredits is the `sbx credits` command group: the caller's org's wallet,
// and the operator's top-ups and prices; one file per verb.
func newCredits(g *globals) *cobra.Command {
	return group(&cobra.Command{Use: "credits", Short: "Balance, settlements and spending of the org; top-ups and prices (operator)"},
		newCreditsBalance(g), newCreditsSpending(g), newCreditsTopUp(g), newCreditsRates(g), newCreditsSetRate(g))
}

// myOrg is the ID of the org the client's key acts for.
func myOrg(ctx context.Context, c *client.Client) (string, error) {
	me, err := c.Me(ctx)
	if err != nil {
		return "", err
	}
	return me.Org.ID, nil
}
