package cli

import (
	"io"
	"strings"

	"github.com/sbxdev/sbx/template"
	"github.com/spf13/cobra"
)

// newTemplateCatalog is `sbx template catalog`: the curated catalog, and
// which of it this host has built.
func newTemplateCatalog(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "catalog",
		Short: "List the curated catalog of templates (sbx template build NAME builds one) and which this host has built",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			type entry struct {
				template.CatalogEntry
				Version string `json:"version,omitempty"`
			}
			var list []entry
			for _, e := range template.Catalog {
				en := entry{CatalogEntry: e}
				if t, err := g.templates().Current(e.Name); err == nil {
					en.Version = t.Version
				}
				list = append(list, en)
			}
			return g.show(list, func(w io.Writer) error {
				rows := [][]string{}
				for _, e := range list {
					rows = append(rows, []string{e.Category, e.Name, orDash(e.Version), e.Description, strings.Join(e.Packages, ",")})
				}
				return table(w, []string{"CATEGORY", "TEMPLATE", "BUILT", "DESCRIPTION", "PACKAGES"}, rows)
			})
		},
	}
}
