package cli

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSnapshot is the `sbx snapshot` command group: snapshots made with
// `sbx sandbox snapshot`, which `sbx sandbox create --snapshot` starts from.
func newSnapshot(g *globals) *cobra.Command {
	return group(&cobra.Command{Use: "snapshot", Aliases: []string{"snapshots"}, Short: "List, inspect and delete snapshots"},
		newSnapshotList(g), newSnapshotGet(g), newSnapshotRm(g))
}

// newSnapshotList is `sbx snapshot list`.
func newSnapshotList(g *globals) *cobra.Command {
	var sandboxID, cursor string
	var limit int
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List snapshots, newest first",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			items, next, err := pages(cursor, all, func(cursor string) ([]apiv1.Snapshot, string, error) {
				l, err := c.Snapshots(ctx, sandboxID, cursor, limit)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			})
			if err != nil {
				return err
			}
			return g.showPage(&apiv1.SnapshotList{Items: items, NextCursor: next}, next, func(w io.Writer) error {
				rows := make([][]string, len(items))
				for i, sn := range items {
					rows[i] = []string{sn.ID, orDash(sn.Name), sn.State, bytesText(sn.SizeBytes), sn.SourceSandboxID, stamp(sn.CreatedAt)}
				}
				return table(w, []string{"SNAPSHOT ID", "NAME", "STATE", "SIZE", "SOURCE", "CREATED"}, rows)
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&sandboxID, "sandbox", "", "only the snapshots of this sandbox (its UUID)")
	f.IntVar(&limit, "limit", 0, "snapshots per page, 1 to 1000 (default: the server's, 100)")
	f.StringVar(&cursor, "cursor", "", "start at this page, as a previous list printed it")
	f.BoolVar(&all, "all", false, "follow cursors to list every page")
	return cmd
}

// newSnapshotGet is `sbx snapshot get ID`.
func newSnapshotGet(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a snapshot",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showSnapshot(c.GetSnapshot(ctx, args[0]))
		}),
	}
}

// newSnapshotRm is `sbx snapshot rm ID`.
func newSnapshotRm(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID",
		Short: "Delete a snapshot: its storage is freed; sandboxes started from it go on",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showSnapshot(c.DeleteSnapshot(ctx, args[0]))
		}),
	}
}
