package cli

import (
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func newTemplateList(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the built templates and their current versions",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := g.templates().List()
			if err != nil {
				return err
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
