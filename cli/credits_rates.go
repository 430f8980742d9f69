package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCreditsRates is `sbx credits rates`: the price table.
func newCreditsRates(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rates",
		Short: "Show the prices per second: every rate with the time it applies from",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			rl, err := c.Rates(ctx)
			if err != nil {
				return err
			}
			return g.show(rl, func(w io.Writer) error {
				rows := make([][]string, 0, len(rl.Items))
				for _, r := range rl.Items {
					from := "always"
					if !r.EffectiveAt.IsZero() {
						from = r.EffectiveAt.Format(time.RFC3339)
					}
					share, typ := "", r.GPUType
					if r.Resource == "gpu" {
						share = "whole card"
						if typ == "" {
							typ = "any other"
						}
						if r.GPUShare > 0 {
							share = fmt.Sprintf("%d%%", r.GPUShare)
						}
					}
					rows = append(rows, []string{r.Resource, typ, share, r.CreditsPerSecond, from})
				}
				return table(w, []string{"RESOURCE", "GPU TYPE", "GPU SHARE", "CREDITS PER SECOND", "FROM"}, rows)
			})
		}),
	}
}
