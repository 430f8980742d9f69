package cli

import (
	"fmt"
	"io"

	"github.com/sbxdev/sbx/template"
	"github.com/spf13/cobra"
)

func newTemplateBuild(g *globals) *cobra.Command {
	var opts template.DebianOptions
	cmd := &cobra.Command{
		Use:   "build NAME",
		Short: "Build a new version of a template (base, code-interpreter, or NAME with --package)",
		Long: `Build a new version of a template as a Debian root made by debootstrap from
this host's Debian mirror. Old versions stay as they were; new sandboxes use
the newest. Progress goes to stderr; the version directory to stdout.`,
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := g.templates().BuildDebian(cmd.Context(), args[0], opts, g.opts.Stderr)
			if err != nil {
				return err
			}
			return g.show(t, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, t.Dir)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Suite, "suite", "bookworm", "Debian suite")
	f.StringVar(&opts.Mirror, "mirror", "", "Debian mirror (default: the one this host's apt uses)")
	f.StringSliceVar(&opts.Packages, "package", nil, "packages to include (default: the recipe of NAME)")
	return cmd
}
