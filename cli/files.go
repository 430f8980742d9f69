package cli

import (
	"context"
	"io"
	"strconv"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newFiles is the `sbx files` command group: a sandbox's filesystem,
// through its agent. The transfers are in files_io.go, watch in
// files_watch.go; this file holds the rest.
func newFiles(g *globals) *cobra.Command {
	return group(&cobra.Command{Use: "files", Aliases: []string{"file", "fs"}, Short: "List, read, write and watch a sandbox's files",
		Long: "List, read, write and watch a sandbox's files. Paths are absolute; a relative one is relative to /workspace."},
		newFilesList(g), newFilesStat(g), newFilesCat(g), newFilesPut(g), newFilesGet(g),
		newFilesMkdir(g), newFilesMove(g), newFilesRemove(g), newFilesWatch(g))
}

// newFilesList is `sbx files ls ID PATH`.
func newFilesList(g *globals) *cobra.Command {
	var depth int
	cmd := &cobra.Command{
		Use:     "ls ID PATH",
		Aliases: []string{"list"},
		Short:   "List a directory's entries, to a depth",
		Args:    args("ID", "PATH"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			items, err := c.Files(args[0]).List(ctx, args[1], depth)
			if err != nil {
				return err
			}
			return g.show(&apiv1.EntryList{Items: items}, func(w io.Writer) error { return entryTable(w, items) })
		}),
	}
	cmd.Flags().IntVarP(&depth, "depth", "d", 1, "levels of subdirectories to descend")
	return cmd
}

// newFilesStat is `sbx files stat ID PATH`.
func newFilesStat(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "stat ID PATH",
		Short: "Describe a file, directory or symlink",
		Args:  args("ID", "PATH"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.showEntry(c.Files(args[0]).Stat(ctx, args[1]))
		}),
	}
}

// newFilesMkdir is `sbx files mkdir ID PATH`.
func newFilesMkdir(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "mkdir ID PATH",
		Short: "Make a directory and its parents",
		Args:  args("ID", "PATH"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.quietEntry(c.Files(args[0]).MakeDir(ctx, args[1]))
		}),
	}
}

// newFilesMove is `sbx files mv ID FROM TO`.
func newFilesMove(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "mv ID FROM TO",
		Aliases: []string{"move", "rename"},
		Short:   "Move or rename an entry",
		Args:    args("ID", "FROM", "TO"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return g.quietEntry(c.Files(args[0]).Rename(ctx, args[1], args[2]))
		}),
	}
}

// newFilesRemove is `sbx files rm ID PATH`.
func newFilesRemove(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID PATH",
		Aliases: []string{"remove"},
		Short:   "Remove an entry, a directory with all it holds",
		Args:    args("ID", "PATH"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return c.Files(args[0]).Remove(ctx, args[1])
		}),
	}
}

// showEntry prints an entry: JSON with --json, else its fields.
func (g *globals) showEntry(e *apiv1.EntryInfo, err error) error {
	if err != nil {
		return err
	}
	return g.show(e, func(w io.Writer) error {
		return fields(w, []field{{"Path", e.Path}, {"Type", e.Type}, {"Size", strconv.FormatInt(e.Size, 10)},
			{"Mode", e.Mode}, {"Modified", stamp(e.ModTime)}, {"Target", e.Target}})
	})
}

// quietEntry prints the entry a change answers with --json only; people
// get silence, as from mkdir and mv.
func (g *globals) quietEntry(e *apiv1.EntryInfo, err error) error {
	if err != nil || !g.json {
		return err
	}
	return printJSON(g.opts.Stdout, e)
}

// entryTable writes entries one a row.
func entryTable(w io.Writer, items []apiv1.EntryInfo) error {
	rows := make([][]string, len(items))
	for i, e := range items {
		path := e.Path
		if e.Target != "" {
			path += " -> " + e.Target
		}
		rows[i] = []string{e.Type, strconv.FormatInt(e.Size, 10), e.Mode, stamp(e.ModTime), path}
	}
	return table(w, []string{"TYPE", "SIZE", "MODE", "MODIFIED", "PATH"}, rows)
}

// argsOptional is args for a command whose last positional argument,
// named in brackets, may be left out.
func argsOptional(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, got []string) error {
		if len(got) == len(names) || len(got) == len(names)-1 {
			return nil
		}
		return usagef("%s takes %s, got %d argument(s)\nusage: %s", cmd.CommandPath(), strings.Join(names, " "), len(got), cmd.UseLine())
	}
}
