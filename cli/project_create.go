package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newProjectCreate is `sbx project create NAME`.
func newProjectCreate(g *globals, s *scope) *cobra.Command {
	return &cobra.Command{
		Use:   "create NAME",
		Short: "Create a project, and its runtime, in the workspace and print its ID",
		Args:  args("NAME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			org, ws, err := s.resolve(ctx, c)
			if err != nil {
				return err
			}
			p, err := c.CreateProject(ctx, org, ws, args[0])
			if err != nil {
				return err
			}
			return g.show(p, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, p.ID)
				return err
			})
		}),
	}
}
