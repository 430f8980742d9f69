package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// The transfers of `sbx files`: each streams, holding no file whole.

// newFilesCat is `sbx files cat ID PATH`.
func newFilesCat(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "cat ID PATH",
		Short: "Print a file",
		Args:  args("ID", "PATH"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			return download(ctx, c.Files(args[0]), args[1], g.opts.Stdout)
		}),
	}
}

// newFilesPut is `sbx files put ID REMOTE [LOCAL|-]`.
func newFilesPut(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "put ID REMOTE [LOCAL|-]",
		Short: "Write a local file, or stdin, to a file in the sandbox, making its parents",
		Args:  argsOptional("ID", "REMOTE", "[LOCAL|-]"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			src, done, err := g.openSource(args[2:])
			if err != nil {
				return err
			}
			defer done()
			return g.quietEntry(c.Files(args[0]).Write(ctx, args[1], src))
		}),
	}
}

// newFilesGet is `sbx files get ID REMOTE [LOCAL|-]`.
func newFilesGet(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "get ID REMOTE [LOCAL|-]",
		Short: "Copy a file from the sandbox to a local file (default: its name, here) or stdout (-)",
		Args:  argsOptional("ID", "REMOTE", "[LOCAL|-]"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			files := c.Files(args[0])
			local := path.Base(args[1])
			if len(args) == 3 {
				local = args[2]
			}
			if local == "-" {
				return download(ctx, files, args[1], g.opts.Stdout)
			}
			r, err := files.Read(ctx, args[1])
			if err != nil {
				return err // before the local file is touched
			}
			defer r.Close()
			return saveTo(local, r)
		}),
	}
}

// download copies a file of the sandbox to w.
func download(ctx context.Context, files *client.Files, remote string, w io.Writer) error {
	r, err := files.Read(ctx, remote)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, r)
	return errors.Join(err, r.Close())
}

// openSource is what a put sends: the local file args names, or stdin
// when it names none or "-"; done closes it.
func (g *globals) openSource(args []string) (src io.Reader, done func(), err error) {
	if len(args) == 0 || args[0] == "-" {
		return g.opts.Stdin, func() {}, nil
	}
	f, err := os.Open(args[0])
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// saveTo copies r to the new local file local, removed when the copy fails.
func saveTo(local string, r io.Reader) error {
	f, err := os.Create(local)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		os.Remove(local)
		return err
	}
	return f.Close()
}
