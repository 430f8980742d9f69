package cli

import "github.com/spf13/cobra"

// newCredits is the `sbx credits` command group: the wallet of the API
// key's org (scope's default), and the operator's top-ups and prices; one
// file per verb.
func newCredits(g *globals) *cobra.Command {
	return group(&cobra.Command{Use: "credits", Short: "Balance, settlements and spending of the org; top-ups and prices (operator)"},
		newCreditsBalance(g), newCreditsSpending(g), newCreditsTopUp(g), newCreditsRates(g), newCreditsSetRate(g))
}
