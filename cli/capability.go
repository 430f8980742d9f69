package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// newCapability is the `sbx capability` command group, one file per verb;
// this file holds the group and what its verbs share. The runtime verbs act
// on the runtime --runtime names, else on the runtime of the API key's
// project (of the workspace's project named default when --workspace names
// another workspace than the key's); the org and workspace are the key's
// unless --org and --workspace say otherwise. A binding is named by its
// capability's name or its ID.
func newCapability(g *globals) *cobra.Command {
	var s capabilityScope
	cmd := group(&cobra.Command{Use: "capability", Aliases: []string{"capabilities", "cap"},
		Short: "Capabilities of runtimes: the catalog, the org's inventory, and what a runtime has installed"},
		newCapabilityList(g, &s), newCapabilityInstall(g, &s), newCapabilityEnable(g, &s), newCapabilityDisable(g, &s),
		newCapabilitySet(g, &s), newCapabilityUninstall(g, &s), newCapabilityResolved(g, &s),
		newCapabilityCatalog(g), newCapabilityInventory(g, &s), newCapabilityUpload(g, &s))
	s.orgFlag(cmd)
	s.workspaceFlag(cmd)
	cmd.PersistentFlags().StringVar(&s.runtime, "runtime", "", "the runtime, by ID (default: the runtime of the API key's project)")
	return cmd
}

// capabilityScope is the org, workspace and runtime a capability verb acts on.
type capabilityScope struct {
	scope
	runtime string
}

// target is the org, workspace and runtime the flags name, what they leave
// out found through the API key (scope.runtimeOf).
func (s *capabilityScope) target(ctx context.Context, c *client.Client) (org, workspace, runtime string, err error) {
	ref, err := s.runtimeOf(ctx, c, s.runtime)
	return ref.org, ref.workspace, ref.id, err
}

// bindings lists every binding of a runtime.
func bindings(ctx context.Context, c *client.Client, org, workspace, runtime string) ([]apiv1.CapabilityBinding, error) {
	items, _, err := pages("", true, func(cursor string) ([]apiv1.CapabilityBinding, string, error) {
		l, err := c.RuntimeCapabilities(ctx, org, workspace, runtime, client.Page{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.NextCursor, nil
	})
	return items, err
}

// binding finds a runtime's binding by capability name or binding ID.
func (s *capabilityScope) binding(ctx context.Context, c *client.Client, ref string) (org, workspace, runtime string, b apiv1.CapabilityBinding, err error) {
	if org, workspace, runtime, err = s.target(ctx, c); err != nil {
		return
	}
	list, err := bindings(ctx, c, org, workspace, runtime)
	if err != nil {
		return
	}
	var names []string
	for _, x := range list {
		if x.Name == ref || x.ID == ref {
			return org, workspace, runtime, x, nil
		}
		names = append(names, x.Name)
	}
	has := "it has none"
	if len(names) > 0 {
		has = "it has " + strings.Join(names, ", ")
	}
	err = fmt.Errorf("runtime %s has no capability %s installed (%s); install it with `sbx capability install %s`", runtime, ref, has, ref)
	return
}

// updateCapability changes the binding named by ref as change says of it,
// and prints it as it is then.
func (g *globals) updateCapability(ctx context.Context, c *client.Client, s *capabilityScope, ref string,
	change func(apiv1.CapabilityBinding) apiv1.UpdateCapabilityRequest) error {
	org, ws, rt, b, err := s.binding(ctx, c, ref)
	if err != nil {
		return err
	}
	got, err := c.UpdateCapability(ctx, org, ws, rt, b.ID, change(b))
	if err != nil {
		return err
	}
	return g.showBinding(got, "")
}

// showBinding prints a binding on one line, after verb when not empty.
func (g *globals) showBinding(b *apiv1.CapabilityBinding, verb string) error {
	return g.show(b, func(w io.Writer) error {
		if verb != "" {
			verb += " "
		}
		_, err := fmt.Fprintf(w, "%s%s %s (%s) on runtime %s, %s, flags %s, binding %s\n", verb, b.Name, b.Version, b.Source, b.RuntimeID,
			enabledText(b.Enabled), flagsText(b.Flags), b.ID)
		return err
	})
}

func enabledText(on bool) string {
	if on {
		return "enabled"
	}
	return "disabled"
}

// flagsText renders flags as name=value, by name; "-" when there are none.
func flagsText(flags map[string]bool) string {
	if len(flags) == 0 {
		return "-"
	}
	names := make([]string, 0, len(flags))
	for k := range flags {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = k + "=" + strconv.FormatBool(flags[k])
	}
	return strings.Join(parts, ",")
}

// flagValues is --flag NAME[=true|false], repeated.
type flagValues map[string]bool

func (f flagValues) add(cmd *cobra.Command, what string) {
	cmd.Flags().Var(f, "flag", what+": NAME, NAME=true or NAME=false; repeat for several")
}

func (f flagValues) String() string { return flagsText(f) }
func (f flagValues) Type() string   { return "NAME[=BOOL]" }

func (f flagValues) Set(v string) error {
	name, value, hasValue := strings.Cut(v, "=")
	on := true
	if hasValue {
		b, err := strconv.ParseBool(value)
		if err != nil {
			return fmt.Errorf("%q: the value of flag %s must be true or false", v, name)
		}
		on = b
	}
	if name == "" {
		return fmt.Errorf("%q names no flag", v)
	}
	f[name] = on
	return nil
}
