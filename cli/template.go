package cli

import (
	"path/filepath"

	"github.com/sbxdev/sbx/internal/hostserve"
	"github.com/sbxdev/sbx/template"
	"github.com/spf13/cobra"
)

// newTemplate is the `sbx template` command group. Templates are built on
// the host that runs `sbx serve`, into its data dir; building needs root.
func newTemplate(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "template", Aliases: []string{"templates"}, Short: "Build and list sandbox templates on this host; read and delete them through the server; give them ready snapshots"}
	cmd.PersistentFlags().StringVar(&g.dataDir, "data-dir", env("SBX_DATA_DIR", hostserve.DataDir), "data dir of sbx serve ($SBX_DATA_DIR)")
	cmd.AddCommand(newTemplateBuild(g), newTemplateCatalog(g), newTemplateList(g), newTemplateGet(g), newTemplateRm(g), newTemplateReady(g), newTemplateExport(g))
	cmd.SetFlagErrorFunc(flagUsage)
	return cmd
}

// templates is the template store of the data dir.
func (g *globals) templates() template.Store {
	return template.Store{Dir: filepath.Join(g.dataDir, "templates")}
}
