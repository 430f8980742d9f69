package cli

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newRunCode is `sbx run-code ID [FILE|-]`: code run in a sandbox's code
// context (a Jupyter kernel that keeps its state), its output as it comes.
func newRunCode(g *globals) *cobra.Command {
	var opts client.CodeOptions
	var out string
	cmd := &cobra.Command{
		Use:   "run-code ID [FILE|-]",
		Short: "Run code in a sandbox's stateful code context (a Jupyter kernel) and show its output and results",
		Long: "Run the code in FILE (or stdin) in the sandbox's code context: --context, or the default context of --language\n" +
			"(python, made on first use). Variables and imports persist from one run to the next. stdout and stderr stream\n" +
			"as they come; each result shows its text/plain; with --out DIR its images (PNG, SVG) and HTML are saved there.\n" +
			"An error shows its traceback, and the command exits 1.",
		Example: "  echo 'x = 41' | sbx run-code sbx-abc\n  echo 'x + 1' | sbx run-code sbx-abc\n  sbx run-code sbx-abc plot.py --out figures/",
		Args:    argsOptional("ID", "[FILE|-]"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			src, done, err := g.openSource(args[1:])
			if err != nil {
				return err
			}
			code, err := io.ReadAll(src)
			done()
			if err != nil {
				return err
			}
			if out != "" {
				if err := os.MkdirAll(out, 0o755); err != nil {
					return err
				}
			}
			saved := 0
			opts.OnStdout = func(s string) { fmt.Fprint(g.opts.Stdout, s) }
			opts.OnStderr = func(s string) { fmt.Fprint(g.opts.Stderr, s) }
			opts.OnResult = func(ev apiv1.CodeEvent) {
				if s, ok := ev.Data["text/plain"].(string); ok {
					fmt.Fprintln(g.opts.Stdout, s)
				}
				if out != "" {
					saved++
					saveResult(g, out, saved, ev)
				}
			}
			ex, err := c.Code(args[0]).Run(ctx, string(code), &opts)
			if err != nil {
				return err
			}
			if e := ex.Error; e != nil {
				for _, line := range e.Traceback {
					fmt.Fprintln(g.opts.Stderr, line)
				}
				if len(e.Traceback) == 0 {
					fmt.Fprintf(g.opts.Stderr, "%s: %s\n", e.Name, e.Value)
				}
				return &exitError{1}
			}
			if ex.End.Status != "ok" {
				return fmt.Errorf("the run ended %s", ex.End.Status)
			}
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&opts.ContextID, "context", "", "the code context to run in (default: the language's default context)")
	f.StringVar(&opts.Language, "language", "", "without --context: python (default)")
	f.DurationVar(&opts.Timeout, "timeout", 0, "interrupt the run after this long (the context lives on); 0: never")
	f.StringVar(&out, "out", "", "save each result's images and HTML to this directory")
	return cmd
}

// saveResult saves a result's images and HTML as result-N.EXT in dir.
func saveResult(g *globals, dir string, n int, ev apiv1.CodeEvent) {
	for mime, ext := range map[string]string{"image/png": "png", "image/jpeg": "jpg", "image/svg+xml": "svg", "text/html": "html"} {
		s, ok := ev.Data[mime].(string)
		if !ok {
			continue
		}
		data := []byte(s)
		if strings.HasPrefix(mime, "image/") && mime != "image/svg+xml" {
			if data, ok = decodeB64(s); !ok {
				continue
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("result-%d.%s", n, ext))
		if err := os.WriteFile(path, data, 0o644); err == nil {
			fmt.Fprintf(g.opts.Stderr, "saved %s (%s)\n", path, mime)
		}
	}
}

func decodeB64(s string) ([]byte, bool) {
	data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	return data, err == nil
}
