package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newOrgCreate is `sbx org create NAME`.
func newOrgCreate(g *globals) *cobra.Command {
	var p planFlags
	var kyc, credits string
	cmd := &cobra.Command{
		Use:     "create NAME",
		Short:   "Create an org with a default workspace and project, and print its owner key, shown this once, first",
		Example: "  sbx org create acme --verification verified --credits 100 --max-sandboxes 10 --max-members 5",
		Args:    args("NAME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			req := apiv1.CreateOrgRequest{Name: args[0], KYCStatus: kyc, Credits: credits}
			if plan := p.plan(); plan != (apiv1.SetPlanRequest{}) {
				req.Plan = &plan
			}
			made, err := c.CreateOrg(ctx, req)
			if err != nil {
				return err
			}
			return g.show(made, func(w io.Writer) error {
				fmt.Fprintln(w, made.Secret)
				return fields(w, append(orgFields(made.Org), field{"Workspace", made.Workspace.Name + " " + made.Workspace.ID},
					field{"Project", made.Project.Name + " " + made.Project.ID},
					field{"Owner key", made.Key.ID + " (its secret above is shown this once)"}))
			})
		}),
	}
	cmd.Flags().StringVar(&kyc, "verification", "", "unverified (default), pending or verified")
	cmd.Flags().StringVar(&credits, "credits", "", "credits it starts with (default none: top it up before it creates sandboxes)")
	p.add(cmd)
	return cmd
}
