package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCreditsSetRate is `sbx credits set-rate RESOURCE CREDITS_PER_SECOND`,
// with the operator's key.
func newCreditsSetRate(g *globals) *cobra.Command {
	var req apiv1.AddRateRequest
	var at string
	cmd := &cobra.Command{
		Use:   "set-rate RESOURCE CREDITS_PER_SECOND",
		Short: "Set a price (the operator's key): cpu per vCPU; memory, paused_storage, snapshot_storage and volume_storage per GiB; gpu per card at a share",
		Example: "  sbx credits set-rate cpu 0.00002\n" +
			"  sbx credits set-rate gpu 0.0012 --gpu-type h100 --effective-at 2026-12-01T00:00:00Z\n" +
			"  sbx credits set-rate cpu 0.00001 --provider docker",
		Args: args("RESOURCE", "CREDITS_PER_SECOND"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, a []string) error {
			req.Resource, req.CreditsPerSecond = a[0], a[1]
			if at != "" {
				t, err := flagTime("--effective-at", at)
				if err != nil {
					return err
				}
				req.EffectiveAt = &t
			}
			r, err := c.AddRate(ctx, req)
			if err != nil {
				return err
			}
			return g.show(r, func(w io.Writer) error {
				on := ""
				if r.Provider != "" {
					on = " on " + r.Provider
				}
				_, err := fmt.Fprintf(w, "%s%s costs %s credits a second from %s\n", r.Resource, on, r.CreditsPerSecond, r.EffectiveAt.Format(time.RFC3339))
				return err
			})
		}),
	}
	cmd.Flags().StringVar(&req.Provider, "provider", "", "the provider whose sandboxes pay it (default: any provider without a rate of its own)")
	cmd.Flags().StringVar(&req.GPUType, "gpu-type", "", "gpu: the card type (default: any type without its own rate)")
	cmd.Flags().IntVar(&req.GPUShare, "gpu-share", 0, "gpu: 25, 50, 75 or 100 (default: the price of a whole card)")
	cmd.Flags().StringVar(&at, "effective-at", "", "RFC 3339 time the price applies from (default: now; never in the past)")
	return cmd
}
