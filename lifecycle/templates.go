package lifecycle

import (
	"context"
	"fmt"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
)

// templateStore: what stands on a template, which its deletion asks.
type templateStore interface {
	TemplateUsers(ctx context.Context, templateID string, limit int) (sbx.TemplateUsers, error)
}

// templateUsersShown bounds how many sandboxes and snapshots a refused
// deletion names, of each.
const templateUsersShown = 20

// Templates lists the templates of the default provider, which every key
// may start sandboxes from.
func (m *Manager) Templates(ctx context.Context, _ sbx.Caller) ([]sbx.TemplateInfo, error) {
	k, err := m.templateKeeper("list templates")
	if err != nil {
		return nil, err
	}
	return k.Templates(ctx)
}

// Template is one template of the default provider, with every version
// kept.
func (m *Manager) Template(ctx context.Context, c sbx.Caller, name string) (sbx.TemplateInfo, error) {
	all, err := m.Templates(ctx, c)
	if err != nil {
		return sbx.TemplateInfo{}, err
	}
	for _, t := range all {
		if t.Name == name {
			return t, nil
		}
	}
	return sbx.TemplateInfo{}, sbx.Errorf(sbx.ENotFound, "template %s does not exist on this server", name)
}

// DeleteTemplate removes a template, every version of it, and its ready
// snapshots (the operator's). A template that anything stands on is a 409
// naming it: sandboxes that are not over (a paused or hibernated one wakes
// on its tree; a warm pool's members count), snapshots (a restore reopens
// the tree of the version it lies on), a warm pool (which would start
// more) or a ready snapshot being prepared. A create that races the
// deletion fails for want of the template, as one of a template never
// built does.
func (m *Manager) DeleteTemplate(ctx context.Context, c sbx.Caller, name string) error {
	if err := authz.Operator(c, "deleting a template"); err != nil {
		return err
	}
	k, err := m.templateKeeper("delete templates")
	if err != nil {
		return err
	}
	if _, err := m.Template(ctx, c, name); err != nil {
		return err
	}
	if _, err := m.store.GetPool(ctx, name); err == nil {
		return sbx.Errorf(sbx.EConflict, "template %s has a warm pool: delete it first (DELETE /api/v1/admin/template-warm-pools/%s, `sbx pool rm %s`)", name, name, name)
	} else if sbx.ErrorCode(err) != sbx.ENotFound {
		return err
	}
	m.mu.Lock()
	why, preparing := m.preparing[name]
	m.mu.Unlock()
	if preparing && why == "" {
		return sbx.Errorf(sbx.EConflict, "template %s's ready snapshot is being prepared; delete the template once it is done", name)
	}
	users, err := m.store.TemplateUsers(ctx, name, templateUsersShown)
	if err != nil {
		return err
	}
	if len(users.Sandboxes) > 0 || len(users.Snapshots) > 0 {
		return sbx.Errorf(sbx.EConflict, "template %s is in use by %s: delete them first", name, usersText(users))
	}
	readies, err := m.store.ReadySnapshots(ctx, name)
	if err != nil {
		return err
	}
	for _, sn := range readies {
		if _, err := m.deleteSnapshot(ctx, sn); err != nil {
			return err
		}
	}
	return k.RemoveTemplate(ctx, name)
}

// usersText names what stands on a template.
func usersText(u sbx.TemplateUsers) string {
	var parts []string
	if n := len(u.Sandboxes); n > 0 {
		parts = append(parts, fmt.Sprintf("%s %s", plural(n, "sandbox", "sandboxes"), strings.Join(u.Sandboxes, ", ")))
	}
	if n := len(u.Snapshots); n > 0 {
		parts = append(parts, fmt.Sprintf("%s %s", plural(n, "snapshot", "snapshots"), strings.Join(u.Snapshots, ", ")))
	}
	return strings.Join(parts, " and ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	if n >= templateUsersShown {
		return fmt.Sprintf("at least %d %s", n, many)
	}
	return many
}

// templateKeeper is the default provider as a keeper of templates, or a
// 501 naming what needed it.
func (m *Manager) templateKeeper(what string) (sbx.TemplateKeeper, error) {
	prov, err := m.provider(m.cfg.DefaultProvider)
	if err != nil {
		return nil, err
	}
	k, ok := prov.(sbx.TemplateKeeper)
	if !ok {
		return nil, sbx.Errorf(sbx.EUnsupported, "provider %s cannot %s: it keeps no templates of its own", prov.Name(), what)
	}
	return k, nil
}
