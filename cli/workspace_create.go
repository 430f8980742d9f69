package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newWorkspaceCreate is `sbx workspace create NAME`.
func newWorkspaceCreate(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:   "create NAME",
		Short: "Create a workspace, with a project named default, and print its ID",
		Args:  args("NAME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			ws, err := c.CreateWorkspace(ctx, org, args[0])
			if err != nil {
				return err
			}
			return g.show(ws, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, ws.ID)
				return err
			})
		}),
	}
}
