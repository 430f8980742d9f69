package cli

import (
	"io"
	"strconv"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/spf13/cobra"
)

func newTemplateList(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List this host's own built templates and their current versions (projects' templates: GET /api/v1/templates)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := g.templates().List()
			if err != nil {
				return err
			}
			list := all[:0]
			for _, t := range all {
				if !strings.HasPrefix(t.Name, sbx.TemplateIDPrefix) { // a project's, which the API lists by its name
					list = append(list, t)
				}
			}
			return g.show(list, func(w io.Writer) error {
				rows := [][]string{}
				for _, t := range list {
					rows = append(rows, []string{t.Name, t.Version, t.Source, startText(t.StartCmd), strings.Join(t.Packages, ",")})
				}
				return table(w, []string{"TEMPLATE", "VERSION", "SOURCE", "START", "PACKAGES"}, rows)
			})
		},
	}
}

// startText is a start command as one table cell: "-" for none, quoted when
// a newline or tab would break the table's lines or columns.
func startText(cmd string) string {
	if strings.ContainsAny(cmd, "\n\r\t") {
		return strconv.Quote(cmd)
	}
	return orDash(cmd)
}
