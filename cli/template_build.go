package cli

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/client"
	"github.com/sbxdev/sbx/template"
	"github.com/spf13/cobra"
)

func newTemplateBuild(g *globals) *cobra.Command {
	var opts template.DebianOptions
	var from, fromTemplate, recipePath string
	var follow bool
	var egress egressFlags
	oci := template.OCIOptions{Username: os.Getenv("SBX_REGISTRY_USERNAME"), Password: os.Getenv("SBX_REGISTRY_PASSWORD")}
	cmd := &cobra.Command{
		Use:   "build NAME",
		Short: "Build a new version of a template (one of the catalog, NAME with --package, NAME --from IMAGE, NAME --from-template T, or on the server NAME --recipe FILE)",
		Long: `Build a new version of a template: a Debian root made by debootstrap from
this host's Debian mirror with the packages, start command and ports of a
template of the curated catalog (sbx template catalog: NAME's, or
--catalog's) or --package's, or with --from the flattened root of an OCI image
(credentials from $SBX_REGISTRY_USERNAME and $SBX_REGISTRY_PASSWORD, else the
Docker config). With --start, the agent starts a command line in the
background (tagged start) when a sandbox boots from the template; an image's
CMD is never used. Commands, PTYs and new files in its sandboxes belong to
its default user unless a request names another: --user, else for a
Debian build the unprivileged "user" (UID 1000, home /home/user, owning
/workspace; made in the root), for an image its configured User, else
root. --from-template makes a template from another's current
root, shared through hard links, with its own --start (and its source's
egress policy unless --egress says another): no build at all. --egress,
--egress-allow and --egress-deny give its sandboxes a default egress policy,
which a create that names none gets (the server's --egress-modes bound it).
Old versions stay as they were; new sandboxes use the newest. Progress goes to stderr; the version directory to stdout.

With --recipe FILE the build is not the host's: any key's, it runs on the
server, in a sandbox of the key's project (POST /api/v1/templates), from the
recipe in FILE (that API's body as JSON, where a file step may name a local
file as "source" in place of its base64 "content"); --follow streams its log
to stderr until it ends and fails with it.`,
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if recipePath != "" {
				if n := cmd.Flags().NFlag() - countSet(cmd, "recipe", "follow", "data-dir"); n > 0 {
					return usagef("--recipe builds on the server: the other flags are the host's")
				}
				req, err := readRecipe(recipePath, args[0])
				if err != nil {
					return err
				}
				return g.apiRunE(func(ctx context.Context, c *client.Client, _ []string) error {
					return g.buildRecipe(ctx, c, req, follow)
				})(cmd, args)
			}
			if follow {
				return usagef("--follow follows a --recipe build")
			}
			if err := template.CheckStartCmd(opts.StartCmd); err != nil {
				return usagef("--start: %v", err)
			}
			if from != "" && fromTemplate != "" {
				return usagef("give --from or --from-template, not both")
			}
			if fromTemplate != "" && opts.User != "" {
				return usagef("--user: a template made --from-template keeps the default user of the one it shares")
			}
			if err := template.CheckUser(opts.User); err != nil {
				return usagef("--user: %v", err)
			}
			if e := egress.policy(); e != nil {
				policy := sbx.Egress{Mode: sbx.EgressMode(e.Mode), Allow: e.Allow, Deny: e.Deny}
				if _, err := template.CheckEgress(&policy); err != nil {
					return usagef("--egress: %v", err)
				}
				opts.Egress = &policy
			}
			if err := template.CheckPorts(opts.Ports); err != nil {
				return usagef("--port: %v", err)
			}
			oci.StartCmd, oci.User, oci.Egress, oci.Ports = opts.StartCmd, opts.User, opts.Egress, opts.Ports
			var t template.Template
			var err error
			switch {
			case fromTemplate != "":
				t, err = g.templates().DeriveWith(args[0], fromTemplate, template.DeriveOptions{StartCmd: opts.StartCmd, Egress: opts.Egress, Ports: opts.Ports})
			case from != "":
				t, err = g.templates().BuildOCI(cmd.Context(), args[0], from, oci, g.opts.Stderr)
			default:
				t, err = g.templates().BuildDebian(cmd.Context(), args[0], opts, g.opts.Stderr)
			}
			if err != nil {
				return err
			}
			return g.show(t, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, t.Dir)
				return err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Suite, "suite", "bookworm", "Debian suite")
	f.StringVar(&opts.Mirror, "mirror", "", "Debian mirror (default: the one this host's apt uses)")
	f.StringSliceVar(&opts.Packages, "package", nil, "packages to include (default: the catalog's entry NAME, or --catalog's)")
	f.StringVar(&opts.Catalog, "catalog", "", "build this entry of the catalog (sbx template catalog) as NAME (default: the entry NAME)")
	f.StringVar(&from, "from", "", "build from this OCI image reference instead of Debian")
	f.StringVar(&fromTemplate, "from-template", "", "share this built template's root (hard links) instead of building one")
	f.StringVar(&opts.StartCmd, "start", "", "command line the agent starts in the background at each sandbox's boot (default none; not the image's CMD)")
	f.StringVar(&opts.User, "user", "", `default user of its sandboxes (default: "user" for a Debian build, made in the root; an image's own User; root for root)`)
	f.BoolVar(&oci.Insecure, "insecure", false, "with --from: allow a plain-HTTP registry")
	egress.add(f, "its sandboxes", "none: the server's default, or for --from-template its source's")
	f.StringVar(&recipePath, "recipe", "", "build on the server, in a sandbox, from the recipe in this JSON file (any key's; no other host flag)")
	f.BoolVar(&follow, "follow", false, "with --recipe: stream the build's log to stderr until it ends")
	f.IntSliceVar(&opts.Ports, "port", nil, "a port its sandboxes serve, listed with its preview URL when a create names none (repeatable; for --from-template default its source's)")
	return cmd
}

// countSet is how many of the named flags were given.
func countSet(cmd *cobra.Command, names ...string) int {
	n := 0
	for _, name := range names {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			n++
		}
	}
	return n
}
