package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxURL is `sbx sandbox url ID PORT`: a preview link, or the
// sandbox's links with --list, or one revoked with --revoke.
func newSandboxURL(g *globals) *cobra.Command {
	var ttl time.Duration
	var list bool
	var revoke string
	cmd := &cobra.Command{
		Use:   "url ID [PORT]",
		Short: "Make a link to a port of a sandbox that works without other credentials until it expires; list or revoke links",
		Long: "Print a preview link to PORT of the sandbox: anyone with it reaches that port (HTTP and WebSocket) until it expires\n" +
			"(--expires, default 1h, at most 7 days) or is revoked (--revoke LINK_ID). The link is shown only now.\n" +
			"Every port is also reachable at the sandbox's previewURL with its traffic token or an API key (sbx sandbox get).",
		Example: "  sbx sandbox url sbx-abc 8080 --expires 2h\n  sbx sandbox url sbx-abc --list\n  sbx sandbox url sbx-abc --revoke 7QX2…",
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 2 && !list && revoke == "":
				if p, err := strconv.Atoi(args[1]); err != nil || p < 1 || p > 65535 {
					return usagef("%q is not a port (1-65535)", args[1])
				}
				return nil
			case len(args) == 1 && (list != (revoke != "")):
				return nil
			}
			return usagef("give ID and PORT to make a link, or ID with --list or --revoke LINK_ID")
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			switch {
			case list:
				links, err := c.PreviewLinks(ctx, args[0])
				if err != nil {
					return err
				}
				return g.show(links, func(w io.Writer) error { return linkTable(w, links.Items) })
			case revoke != "":
				l, err := c.RevokePreviewLink(ctx, args[0], revoke)
				if err != nil {
					return err
				}
				return g.show(l, func(w io.Writer) error { return linkTable(w, []apiv1.PreviewLink{*l}) })
			}
			port, _ := strconv.Atoi(args[1])
			l, err := c.CreatePreviewLink(ctx, args[0], port, ttl)
			if err != nil {
				return err
			}
			return g.show(l, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, l.URL)
				return err
			})
		}),
	}
	f := cmd.Flags()
	f.Var(durationValue{&ttl}, "expires", "how long the link works, in seconds or as 2h (default 1h, at most 7 days)")
	f.BoolVar(&list, "list", false, "list the sandbox's links (without their tokens)")
	f.StringVar(&revoke, "revoke", "", "revoke the link with this ID")
	return cmd
}

// linkTable prints preview links, a row each.
func linkTable(w io.Writer, links []apiv1.PreviewLink) error {
	rows := make([][]string, len(links))
	for i, l := range links {
		rows[i] = []string{l.ID, strconv.Itoa(l.Port), stamp(l.CreatedAt), stamp(l.ExpiresAt), stampPtr(l.RevokedAt)}
	}
	return table(w, []string{"ID", "PORT", "CREATED", "EXPIRES", "REVOKED"}, rows)
}
