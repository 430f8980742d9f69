package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxSnapshot is `sbx sandbox snapshot ID`.
func newSandboxSnapshot(g *globals) *cobra.Command {
	var o client.SnapshotOptions
	cmd := &cobra.Command{
		Use:   "snapshot ID",
		Short: "Capture a running or paused sandbox as a snapshot; it goes on as it was",
		Long: "Capture a sandbox's memory, processes and files as a snapshot, which outlives it and starts\n" +
			"any number of sandboxes (`sbx sandbox create --snapshot SNAPSHOT`). The sandbox stands still\n" +
			"only while its memory is written. Its ID is printed first.",
		Args: args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showSnapshot(c.Snapshot(ctx, args[0], &o))
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "a name to know it by")
	f.Var(pairsValue{&o.Metadata}, "metadata", "metadata of the snapshot (repeatable)")
	f.BoolVar(&o.FilesOnly, "files-only", false, "capture its files alone: sandboxes from it boot on them with fresh processes")
	return cmd
}

// showSnapshot prints a snapshot: its ID first.
func (g *globals) showSnapshot(sn *apiv1.Snapshot, err error) error {
	if err != nil {
		return err
	}
	return g.show(sn, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s %s, %s, from sandbox %s (stood still %d ms)\n", sn.ID, sn.State, bytesText(sn.SizeBytes), sn.SourceSandboxID, sn.PausedMs)
		return err
	})
}
