package cli

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxList is `sbx sandbox list`. With --project-id it reads the org
// ledger view, which filters by state and project only.
func newSandboxList(g *globals) *cobra.Command {
	var o client.ListOptions
	var projectID string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sandboxes, newest first",
		Args:  args(),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if projectID != "" && (o.Template != "" || len(o.Metadata) > 0) {
				return usagef("--project-id lists the org ledger view, which filters by --state only; drop --template and --metadata")
			}
			return nil
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			fetch := func(cursor string) ([]apiv1.Sandbox, string, error) {
				o.Cursor = cursor
				return listPage(c.List(ctx, o))
			}
			if projectID != "" {
				me, err := c.Me(ctx)
				if err != nil {
					return err
				}
				fetch = func(cursor string) ([]apiv1.Sandbox, string, error) {
					return listPage(c.OrgSandboxes(ctx, me.Org.ID, client.OrgListOptions{
						States: o.States, ProjectID: projectID, Limit: o.Limit, Cursor: cursor}))
				}
			}
			items, next, err := pages(o.Cursor, all, fetch)
			if err != nil {
				return err
			}
			return g.showPage(&apiv1.SandboxList{Items: items, NextCursor: next}, next, func(w io.Writer) error {
				return sandboxTable(w, items)
			})
		}),
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.States, "state", nil, "only sandboxes in this state: starting, running, paused, killed or failed (repeatable)")
	f.StringVar(&projectID, "project-id", "", "only this project's sandboxes, from the org ledger view")
	f.StringVar(&o.Template, "template", "", "only sandboxes of this template")
	f.Var(pairsValue{&o.Metadata}, "metadata", "only sandboxes with this metadata (repeatable)")
	f.IntVar(&o.Limit, "limit", 0, "sandboxes per page, 1 to 1000 (default: the server's, 100)")
	f.StringVar(&o.Cursor, "cursor", "", "start at this page, as a previous list printed it")
	f.BoolVar(&all, "all", false, "follow cursors to list every page")
	return cmd
}

// listPage unpacks a list answer for pages.
func listPage(l *apiv1.SandboxList, err error) ([]apiv1.Sandbox, string, error) {
	if err != nil {
		return nil, "", err
	}
	return l.Items, l.NextCursor, nil
}

// sandboxTable writes sandboxes one a row.
func sandboxTable(w io.Writer, items []apiv1.Sandbox) error {
	rows := make([][]string, len(items))
	for i := range items {
		sb := &items[i]
		until := sb.ExpiresAt
		if sb.EndedAt != nil {
			until = sb.EndedAt
		}
		rows[i] = []string{sb.SandboxID, sb.State, sb.TemplateID, sb.Kind, sb.Provider,
			stamp(sb.CreatedAt), orDash(stampPtr(until)), orDash(reason(sb))}
	}
	return table(w, []string{"SANDBOX ID", "STATE", "TEMPLATE", "KIND", "PROVIDER", "CREATED", "EXPIRES/ENDED", "PAUSE/END REASON"}, rows)
}
