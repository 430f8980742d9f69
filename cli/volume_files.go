package cli

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// The files of `sbx volume`, without a sandbox: each streams.

// newVolumePut is `sbx volume put VOLUME REMOTE [LOCAL|-]`.
func newVolumePut(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "put VOLUME REMOTE [LOCAL|-]",
		Short: "Write a local file, or stdin, to a file of the volume, making its parents",
		Args:  argsOptional("VOLUME", "REMOTE", "[LOCAL|-]"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			src, done, err := g.openSource(args[2:])
			if err != nil {
				return err
			}
			defer done()
			e, err := c.WriteVolumeFile(ctx, args[0], args[1], src)
			if err != nil {
				return err
			}
			return g.show(e, func(w io.Writer) error { return entryTable(w, []apiv1.EntryInfo{*e}) })
		}),
	}
}

// newVolumeGet is `sbx volume get VOLUME REMOTE [LOCAL]`.
func newVolumeGet(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get VOLUME REMOTE [LOCAL]",
		Short: "Copy a file of the volume to a local file, or to stdout",
		Args:  argsOptional("VOLUME", "REMOTE", "[LOCAL]"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			r, err := c.ReadVolumeFile(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			defer r.Close()
			if len(args) == 3 {
				return saveTo(args[2], r)
			}
			_, err = io.Copy(g.opts.Stdout, r)
			return err
		}),
	}
}

// newVolumeLs is `sbx volume ls VOLUME [PATH]`.
func newVolumeLs(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "ls VOLUME [PATH]",
		Short: "List a directory of the volume (default its root)",
		Args:  argsOptional("VOLUME", "[PATH]"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			p := "/"
			if len(args) == 2 {
				p = args[1]
			}
			l, err := c.ListVolumeFiles(ctx, args[0], p)
			if err != nil {
				return err
			}
			return g.show(l, func(w io.Writer) error { return entryTable(w, l.Items) })
		}),
	}
}
