package cli

import (
	"context"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newTemplateRm is `sbx template rm NAME`: a client verb (the operator's),
// since only the server knows what still stands on the template.
func newTemplateRm(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Delete a template, every version of it, and its ready snapshot (the operator's); refused while sandboxes or snapshots stand on it",
		Args:  args("NAME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return c.DeleteTemplate(ctx, args[0])
		}),
	}
}
