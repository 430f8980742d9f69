package cli

import "github.com/spf13/cobra"

// newSandbox is the `sbx sandbox` command group.
func newSandbox(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "sandbox", Aliases: []string{"sandboxes", "sb"}, Short: "Create, inspect and control sandboxes"}
	return cmd
}
