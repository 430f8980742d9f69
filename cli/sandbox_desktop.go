package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxDesktop is `sbx sandbox desktop ID`: the viewer of a
// sandbox's desktop, opened in a browser when one can be started here, or
// a screenshot of it.
func newSandboxDesktop(g *globals) *cobra.Command {
	var interactive bool
	var screenshot string
	cmd := &cobra.Command{
		Use:   "desktop ID",
		Short: "Open the viewer of a sandbox's desktop (a desktop template's), or save a screenshot of it",
		Long: "Print the URL of the sandbox's desktop viewer (noVNC, served by sbx, opened with the sandbox's traffic token: keep it\n" +
			"as you would the token) and open it with xdg-open when there is one. View only unless --interactive.\n" +
			"--screenshot FILE saves a PNG of the desktop instead.",
		Example: "  sbx sandbox desktop sbx-abc\n  sbx sandbox desktop sbx-abc --screenshot desk.png",
		Args:    args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			if screenshot != "" {
				png, err := c.Screenshot(ctx, args[0])
				if err != nil {
					return err
				}
				return os.WriteFile(screenshot, png, 0o644)
			}
			sb, err := c.Get(ctx, args[0])
			if err != nil {
				return err
			}
			url := c.DesktopURL(sb.SandboxID, sb.TrafficToken, !interactive)
			if err := g.show(map[string]string{"url": url}, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, url)
				return err
			}); err != nil {
				return err
			}
			if open, err := exec.LookPath("xdg-open"); err == nil && os.Getenv("DISPLAY") != "" {
				exec.Command(open, url).Start()
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&interactive, "interactive", false, "let the viewer's keys and pointer reach the desktop")
	cmd.Flags().StringVar(&screenshot, "screenshot", "", "save a PNG of the desktop to this file instead")
	return cmd
}
