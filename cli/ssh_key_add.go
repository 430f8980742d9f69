package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// maxKeyFile bounds the public key file read.
const maxKeyFile = 64 << 10

// newSSHKeyAdd is `sbx ssh-key add [--project P | --user U] FILE|-`.
func newSSHKeyAdd(g *globals, s *scope) *cobra.Command {
	var req apiv1.AddSSHKeyRequest
	var project string
	cmd := &cobra.Command{
		Use:   "add FILE|-",
		Short: "Register a public key (a .pub file, or - for stdin) to you, a member or a project",
		Long: "Register a public key, so that `ssh -p 2222 SANDBOX_ID@HOST` lets its holder into the sandboxes an API key " +
			"of its member or project reaches. Without --project or --user the key is the API key's own: its member's " +
			"(a member's key) or its project's (a project's key). Registering one for someone else needs what making their " +
			"API key needs (admin in their workspaces).",
		Example: "  sbx ssh-key add ~/.ssh/id_ed25519.pub\n  sbx ssh-key add --project web deploy.pub --name ci",
		Args:    args("FILE|-"),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if req.User != "" && project != "" {
				return usagef("an SSH key is a member's (--user) or a project's (--project), not both")
			}
			return nil
		},
		RunE: g.apiRunE(func(ctx context.Context, c *client.Client, args []string) error {
			text, err := readPublicKey(g, args[0])
			if err != nil {
				return err
			}
			req.PublicKey = text
			org, err := s.orgOf(ctx, c)
			if err != nil {
				return err
			}
			if project != "" {
				if req.ProjectID, err = s.projectID(ctx, c, project); err != nil {
					return err
				}
			}
			k, err := c.AddSSHKey(ctx, org, req)
			if err != nil {
				return err
			}
			return g.show(k, func(w io.Writer) error {
				return fields(w, []field{{"SSH key ID", k.ID}, {"Name", k.Name}, {"Fingerprint", k.Fingerprint}, {"Scope", k.Scope},
					{"Project", k.ProjectID}, {"User", k.UserID}})
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&project, "project", "", "a project, by ID or name (in the API key's workspace, or --workspace's): the key acts in that project only")
	f.StringVar(&req.User, "user", "", "a member's user ID or email: the key acts as that member")
	f.StringVar(&req.Name, "name", "", "a name to tell the key apart (default: the key's comment)")
	return cmd
}

// readPublicKey reads a public key from file, or stdin for "-", refusing a
// private key.
func readPublicKey(g *globals, file string) (string, error) {
	var r io.Reader = g.opts.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxKeyFile+1))
	if err != nil {
		return "", err
	}
	text := string(data)
	switch {
	case len(data) > maxKeyFile:
		return "", fmt.Errorf("%s: a public key is one line, not %d bytes or more", file, maxKeyFile)
	case strings.Contains(text, "PRIVATE KEY"):
		return "", fmt.Errorf("%s is a private key: give its public half, the .pub file beside it (it never leaves your machine)", file)
	}
	return text, nil
}
