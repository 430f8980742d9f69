package cli

import (
	"context"
	"io"

	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxConnect is `sbx sandbox connect ID`.
func newSandboxConnect(g *globals) *cobra.Command {
	var o client.ConnectOptions
	cmd := &cobra.Command{
		Use:   "connect ID",
		Short: "Reconnect to a sandbox, resuming it when paused, and print its runtime URL and access token",
		Args:  args("ID"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			sb, err := c.Connect(ctx, args[0], &o)
			if err != nil {
				return err
			}
			data := sb.Data()
			return g.show(&data, func(w io.Writer) error {
				return fields(w, []field{
					{"Sandbox ID", data.SandboxID}, {"State", stateText(&data)}, {"Expires", stampPtr(data.ExpiresAt)},
					{"Runtime URL", data.RuntimeURL}, {"Access token", data.AccessToken},
				})
			})
		}),
	}
	cmd.Flags().Var(durationValue{&o.Timeout}, "timeout", "keep a running sandbox at least this long from now, in seconds or as 1h: it only extends, never shortens, the time left (use `sbx sandbox timeout` to set it exactly); a paused sandbox resumes with this timeout (default: the sandbox's own)")
	cmd.Flags().BoolVar(&o.RotateAccessToken, "rotate-token", false, "give the sandbox a new access token; the old one stops working")
	return cmd
}
