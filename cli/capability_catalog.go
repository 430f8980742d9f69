package cli

import (
	"context"
	"io"
	"strings"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapabilityCatalog is `sbx capability catalog`.
func newCapabilityCatalog(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "catalog",
		Short: "List the public catalog: the capabilities shipped with the server",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			l, err := c.CapabilityCatalog(ctx)
			if err != nil {
				return err
			}
			return g.show(l, func(w io.Writer) error {
				rows := make([][]string, len(l.Items))
				for i, it := range l.Items {
					flags := make([]string, len(it.Flags))
					for j, f := range it.Flags {
						flags[j] = f.Name
					}
					rows[i] = []string{it.Name, it.Version, orDash(strings.Join(flags, ",")), it.Description}
				}
				return table(w, []string{"NAME", "VERSION", "FLAGS", "DESCRIPTION"}, rows)
			})
		}),
	}
}
