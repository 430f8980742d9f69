package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/client"
	"github.com/spf13/cobra"
)

// The tenancy command groups of an org: `sbx workspace`, `sbx project`,
// `sbx member` and `sbx key`, one file per verb; this file holds the
// groups and what their verbs share. They act in the org of the API key,
// or the one --org names, and in its workspace, or the one --workspace names.

// scope is the org and workspace a tenancy verb acts in.
type scope struct{ org, workspace string }

// orgFlag adds --org to a group.
func (s *scope) orgFlag(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&s.org, "org", "", "the org, by ID or name (default: the API key's)")
}

// workspaceFlag adds --workspace to a group.
func (s *scope) workspaceFlag(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVarP(&s.workspace, "workspace", "w", "", "the workspace, by ID or name (default: the API key's)")
}

// orgOf is the org of --org, or the key's own.
func (s *scope) orgOf(ctx context.Context, c *client.Client) (string, error) {
	if s.org != "" {
		return s.org, nil
	}
	me, err := c.Me(ctx)
	if err != nil {
		return "", err
	}
	return me.Org.ID, nil
}

// resolve fills in what the flags left out from the key's own org and
// workspace.
func (s *scope) resolve(ctx context.Context, c *client.Client) (org, workspace string, err error) {
	if s.org != "" && s.workspace != "" {
		return s.org, s.workspace, nil
	}
	me, err := c.Me(ctx)
	if err != nil {
		return "", "", err
	}
	return s.resolveWith(me)
}

// resolveWith is resolve with the API key's own org and workspace known.
func (s *scope) resolveWith(me *apiv1.Me) (org, workspace string, err error) {
	org, workspace = s.org, s.workspace
	if org == "" {
		org = me.Org.ID
	}
	if workspace == "" {
		if s.org != "" && s.org != me.Org.ID && s.org != me.Org.Name {
			return "", "", usagef("--org %s is not the API key's org: name the workspace with --workspace", s.org)
		}
		workspace = me.Workspace.ID
	}
	return org, workspace, nil
}

// pageFlags are the flags of a tenancy list.
type pageFlags struct {
	page client.Page
	all  bool
}

func (p *pageFlags) add(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	f.IntVar(&p.page.Limit, "limit", 0, what+" per page, 1 to 1000 (default: the server's, 100)")
	f.StringVar(&p.page.Cursor, "cursor", "", "start at this page, as a previous list printed it")
	f.BoolVar(&p.all, "all", false, "follow cursors to list every page")
}

// list fetches a tenancy list as the page flags say and prints it.
func list[T any](g *globals, p pageFlags, fetch func(client.Page) ([]T, string, error), header []string, row func(T) []string) error {
	items, next, err := pages(p.page.Cursor, p.all, func(cursor string) ([]T, string, error) {
		return fetch(client.Page{Limit: p.page.Limit, Cursor: cursor})
	})
	if err != nil {
		return err
	}
	out := struct {
		Items      []T    `json:"items"`
		NextCursor string `json:"next_cursor,omitempty"`
	}{items, next}
	return g.showPage(out, next, func(w io.Writer) error {
		rows := make([][]string, len(items))
		for i, it := range items {
			rows[i] = row(it)
		}
		return table(w, header, rows)
	})
}

func newWorkspace(g *globals) *cobra.Command {
	var s scope
	cmd := group(&cobra.Command{Use: "workspace", Aliases: []string{"workspaces", "ws"}, Short: "List and create the workspaces of an org"},
		newWorkspaceList(g, &s), newWorkspaceCreate(g, &s))
	s.orgFlag(cmd)
	return cmd
}

func newProject(g *globals) *cobra.Command {
	var s scope
	cmd := group(&cobra.Command{Use: "project", Aliases: []string{"projects"}, Short: "List and create the projects of a workspace"},
		newProjectList(g, &s), newProjectCreate(g, &s))
	s.orgFlag(cmd)
	s.workspaceFlag(cmd)
	return cmd
}

func newMember(g *globals) *cobra.Command {
	var s scope
	cmd := group(&cobra.Command{Use: "member", Aliases: []string{"members"}, Short: "List, add and remove the members of a workspace"},
		newMemberList(g, &s), newMemberAdd(g, &s), newMemberRm(g, &s))
	s.orgFlag(cmd)
	s.workspaceFlag(cmd)
	return cmd
}

func newKey(g *globals) *cobra.Command {
	var s scope
	cmd := group(&cobra.Command{Use: "key", Aliases: []string{"keys"}, Short: "List, make and revoke the API keys of an org"},
		newKeyList(g, &s), newKeyCreate(g, &s), newKeyRevoke(g, &s))
	s.orgFlag(cmd)
	return cmd
}

// memberChangeText says what adding or removing a member did.
func memberChangeText(w io.Writer, verb string, ch *apiv1.MemberChange) error {
	limit := "no limit"
	if ch.MemberLimit > 0 {
		limit = fmt.Sprintf("the plan allows %d", ch.MemberLimit)
	}
	fmt.Fprintf(w, "%s %s (%s): workspace has %d member(s), %s\n", verb, ch.Member.User.Email, ch.Member.Role, ch.Members, limit)
	if len(ch.Paused) > 0 {
		fmt.Fprintf(w, "paused (member_limit_exceeded) until members are removed: %s\n", strings.Join(ch.Paused, " "))
	}
	if len(ch.Resumed) > 0 {
		fmt.Fprintf(w, "resumed: %s\n", strings.Join(ch.Resumed, " "))
	}
	return nil
}
