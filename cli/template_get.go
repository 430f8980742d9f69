package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newTemplateGet is `sbx template get NAME`: a client verb, every version
// the server keeps of a template.
func newTemplateGet(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show a template of the server and every version of it kept",
		Args:  args("NAME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			t, err := c.Template(ctx, args[0])
			if err != nil {
				return err
			}
			return g.show(t, func(w io.Writer) error {
				if _, err := fmt.Fprintf(w, "%s (current version %s)\n", t.Name, t.Version); err != nil {
					return err
				}
				rows := [][]string{}
				for _, v := range t.Versions {
					rows = append(rows, []string{v.Version, map[bool]string{true: "yes"}[v.Current], bytesText(v.SizeBytes), v.Source,
						startText(v.StartCmd), orDash(v.User), orDash(strings.Join(v.Packages, ",")), stamp(v.CreatedAt)})
				}
				return table(w, []string{"VERSION", "CURRENT", "SIZE", "SOURCE", "START", "USER", "PACKAGES", "CREATED"}, rows)
			})
		}),
	}
}
