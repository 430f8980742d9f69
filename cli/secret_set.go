package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// newSecretSet is `sbx secret set NAME [--user] [--value V]`.
func newSecretSet(g *globals, s *scope) *cobra.Command {
	var user bool
	var value string
	var cmd *cobra.Command
	cmd = &cobra.Command{
		Use:   "set NAME",
		Short: "Set a secret: make it, or give the one of that name a new value",
		Long: "Set a secret of the org (owners and admins) or, with --user, one of your own (a member's key). " +
			"The value is read from stdin (one trailing newline dropped; at a terminal it is asked for and not echoed), " +
			"so that it stays out of shell history, unless --value gives it. It is never shown again.",
		Example: "  printf %s \"$TOKEN\" | sbx secret set GITHUB_TOKEN\n  sbx secret set OPENAI_API_KEY --user < key.txt",
		Args:    args("NAME"),
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			v := value
			if !cmd.Flags().Changed("value") {
				var err error
				if v, err = readSecret(g, args[0]); err != nil {
					return err
				}
			}
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			sec, created, err := c.SetSecret(ctx, org, apiv1.SetSecretRequest{Name: args[0], Value: v, Scope: secretScope(user)})
			if err != nil {
				return err
			}
			return g.show(sec, func(w io.Writer) error {
				verb := "replaced the value of"
				if created {
					verb = "made"
				}
				_, err := fmt.Fprintf(w, "%s %s\n", verb, secretWhat(sec))
				return err
			})
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&user, "user", false, "your own secret, not the org's (needs a member's key)")
	f.StringVar(&value, "value", "", "the value (default: read from stdin, which keeps it out of shell history)")
	return cmd
}

// readSecret reads a secret's value from stdin: at a terminal it asks for
// it without echo; otherwise it takes all of stdin, less one trailing
// newline.
func readSecret(g *globals, name string) (string, error) {
	if fd, ok := terminal(g.opts.Stdin); ok {
		fmt.Fprintf(g.opts.Stderr, "value of %s (not shown): ", name)
		v, err := term.ReadPassword(fd)
		fmt.Fprintln(g.opts.Stderr)
		if err != nil {
			return "", fmt.Errorf("reading the value from the terminal: %w", err)
		}
		return string(v), nil
	}
	data, err := io.ReadAll(io.LimitReader(g.opts.Stdin, sbx.MaxSecretValueBytes+3))
	if err != nil {
		return "", fmt.Errorf("reading the value from stdin: %w", err)
	}
	v := strings.TrimSuffix(string(data), "\n")
	if len(v) < len(data) {
		v = strings.TrimSuffix(v, "\r")
	}
	if v == "" {
		return "", usagef("no value for %s: give it on stdin or with --value", name)
	}
	return v, nil
}
