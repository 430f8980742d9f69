package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newVolume is the `sbx volume` command group: named storage with a cap
// that outlives sandboxes (`sbx sandbox create --volume NAME:PATH`), and
// its files without a sandbox. A volume is named by its ID or its name in
// the key's project.
func newVolume(g *globals) *cobra.Command {
	return group(&cobra.Command{Use: "volume", Aliases: []string{"volumes", "vol"}, Short: "Create volumes, manage them and their files"},
		newVolumeCreate(g), newVolumeList(g), newVolumeInfo(g), newVolumeResize(g), newVolumeRm(g),
		newVolumePut(g), newVolumeGet(g), newVolumeLs(g))
}

// showVolume prints a volume: its ID first.
func (g *globals) showVolume(v *apiv1.Volume, err error) error {
	if err != nil {
		return err
	}
	return g.show(v, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s %s %s, %d MiB\n", v.ID, v.Name, v.State, v.SizeMB)
		return err
	})
}

// newVolumeList is `sbx volume list`.
func newVolumeList(g *globals) *cobra.Command {
	var cursor string
	var limit int
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List volumes, newest first",
		Args:  args(),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
			items, next, err := pages(cursor, all, func(cursor string) ([]apiv1.Volume, string, error) {
				l, err := c.Volumes(ctx, cursor, limit)
				if err != nil {
					return nil, "", err
				}
				return l.Items, l.NextCursor, nil
			})
			if err != nil {
				return err
			}
			return g.showPage(&apiv1.VolumeList{Items: items, NextCursor: next}, next, func(w io.Writer) error {
				rows := make([][]string, len(items))
				for i, v := range items {
					rows[i] = []string{v.ID, v.Name, v.State, fmt.Sprint(v.SizeMB), v.ProjectID, stamp(v.CreatedAt)}
				}
				return table(w, []string{"VOLUME ID", "NAME", "STATE", "SIZE MB", "PROJECT", "CREATED"}, rows)
			})
		}),
	}
	f := cmd.Flags()
	f.IntVar(&limit, "limit", 0, "volumes per page, 1 to 1000 (default: the server's, 100)")
	f.StringVar(&cursor, "cursor", "", "start at this page, as a previous list printed it")
	f.BoolVar(&all, "all", false, "follow cursors to list every page")
	return cmd
}
