package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newSandboxEgress is `sbx sandbox egress ID [internet|none|allow]`.
func newSandboxEgress(g *globals) *cobra.Command {
	var allow, deny []string
	cmd := &cobra.Command{
		Use:   "egress ID [internet|none|allow]",
		Short: "Show a sandbox's egress policy, or replace it at once (running or paused)",
		Long: `Without a mode, print the sandbox's egress policy. With one, replace the
whole policy at once, on a running or paused sandbox: internet (every public
address, less --deny), none (nothing, not even DNS) or allow (only --allow,
less --deny). Entries are IPv4 addresses, CIDR prefixes or domain names, which
the server resolves and follows. Connections the new policy does not allow
stop passing.`,
		Example: "  sbx sandbox egress sbx-abc\n  sbx sandbox egress sbx-abc none\n" +
			"  sbx sandbox egress sbx-abc allow --allow pypi.org,files.pythonhosted.org --deny 203.0.113.7\n" +
			"  sbx sandbox egress sbx-abc internet --deny example.com",
		Args: argsOptional("ID", "MODE"),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (cmd.Flags().Changed("allow") || cmd.Flags().Changed("deny")) {
				return usagef("--allow and --deny go with a mode: sbx sandbox egress %s allow --allow …", args[0])
			}
			return nil
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			var sb *apiv1.Sandbox
			var err error
			if len(args) == 1 {
				sb, err = c.Get(ctx, args[0])
			} else {
				sb, err = c.SetEgress(ctx, args[0], apiv1.Egress{Mode: args[1], Allow: allow, Deny: deny})
			}
			if err != nil {
				return err
			}
			if sb.Egress == nil {
				return g.show(struct{}{}, func(w io.Writer) error {
					_, err := fmt.Fprintln(w, "none recorded: its provider enforces no policy, or it was made before sandboxes had policies")
					return err
				})
			}
			return g.show(sb.Egress, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, egressText(sb.Egress))
				return err
			})
		}),
	}
	f := cmd.Flags()
	f.StringSliceVar(&allow, "allow", nil, "with mode allow: an IPv4 address, CIDR prefix or domain name it reaches (repeat, or separate with commas)")
	f.StringSliceVar(&deny, "deny", nil, "an address, prefix or domain name it never reaches (repeat, or separate with commas)")
	return cmd
}
