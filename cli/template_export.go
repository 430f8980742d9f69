package cli

import (
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/sbxdev/sbx/internal/sbximage"
	"github.com/sbxdev/sbx/template"
	"github.com/spf13/cobra"
)

// exported is what `sbx template export` and `sbx kubernetes images`
// print of each image they write.
type exported struct {
	Image string `json:"image"`
	File  string `json:"file"`
}

// newTemplateExport is `sbx template export NAME -o FILE.tar`: a template
// of this host's store as a container image, for the kubernetes provider
// (its nodes pull templates as images) or any container engine.
func newTemplateExport(g *globals) *cobra.Command {
	var version, tag, prefix, templatesDir, out string
	cmd := &cobra.Command{
		Use:   "export NAME -o FILE.tar",
		Short: "Write a template of this host as a container image (a docker-archive tarball: docker load, ctr images import, crane push)",
		Long: "The image has one layer, the template's tree, and is configured with its user, working directory,\n" +
			"ports and an environment as its sandboxes have; its start command is the label " + template.LabelStart + ".\n" +
			"It is tagged <--tag-prefix>" + template.ImageRepo + "/NAME:VERSION unless --tag names another reference,\n" +
			"as the kubernetes provider runs template NAME: <--k8s-image-prefix>" + template.ImageRepo + "/NAME:VERSION.",
		Example: "  sbx template export base -o base.tar && ctr -n k8s.io images import base.tar\n" +
			"  sbx template export base --tag-prefix registry.example.com/sbx/ -o base.tar   # then crane push base.tar <the reference it prints>",
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("%s needs -o FILE.tar\nusage: %s", cmd.CommandPath(), cmd.UseLine())
			}
			store := g.templates()
			if templatesDir != "" {
				store = template.Store{Dir: templatesDir}
			}
			t, err := store.At(args[0], version)
			if err != nil {
				return err
			}
			if tag == "" {
				tag = template.ImageRef(prefix, t)
			}
			if err := sbximage.Save(out, tag, func(layer string) (v1.Image, error) { return template.Image(t, layer) }); err != nil {
				return err
			}
			e := exported{Image: tag, File: out}
			return g.show(e, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "%s: %s\n", e.File, e.Image)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&version, "version", "", "the version to export (default: the current one)")
	f.StringVar(&tag, "tag", "", "the image's reference (default <--tag-prefix>"+template.ImageRepo+"/NAME:VERSION)")
	f.StringVar(&prefix, "tag-prefix", "", "what the image's default reference starts with: a registry and path ending in /, as serve's --k8s-image-prefix")
	f.StringVar(&templatesDir, "templates-dir", "", "where the templates live, as serve's --templates-dir (default <data-dir>/templates)")
	f.StringVarP(&out, "output", "o", "", "the tarball to write")
	return cmd
}
