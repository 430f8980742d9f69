package lifecycle

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
)

// templateStore: what stands on a template, which its deletion asks, and
// its tags.
type templateStore interface {
	TemplateUsers(ctx context.Context, templateID string, limit int) (sbx.TemplateUsers, error)
	SetTemplateTag(ctx context.Context, templateID, tag, version string, now time.Time) error
	DeleteTemplateTags(ctx context.Context, templateID string, tags ...string) error
	TemplateTags(ctx context.Context, templateID string) (map[string]string, error)
}

// templateUsersShown bounds how many sandboxes and snapshots a refused
// deletion names, of each.
const templateUsersShown = 20

// Templates lists the templates c may start sandboxes from: the server's
// own (the default provider's), then the templates of the projects c sees,
// by name, each with every version kept (none until its first build is
// ready).
func (m *Manager) Templates(ctx context.Context, c sbx.Caller) ([]sbx.TemplateInfo, error) {
	k, err := m.templateKeeper("list templates")
	if err != nil {
		return nil, err
	}
	all, err := k.Templates(ctx)
	if err != nil {
		return nil, err
	}
	trees := map[string]sbx.TemplateInfo{}
	var out []sbx.TemplateInfo
	for _, t := range all {
		if strings.HasPrefix(t.Name, sbx.TemplateIDPrefix) {
			trees[t.Name] = t
			continue
		}
		t.ID = t.Name
		out = append(out, t)
	}
	own, err := m.store.ProjectTemplates(ctx, c.Org.ID, "")
	if err != nil {
		return nil, err
	}
	for _, t := range own {
		if m.Sees(ctx, c, sbx.Sandbox{OrgID: t.OrgID, WorkspaceID: t.WorkspaceID, ProjectID: t.ProjectID}, t.ID) == nil {
			out = append(out, projectInfo(t, trees[t.ID]))
		}
	}
	for i := range out {
		if out[i].Tags, err = m.store.TemplateTags(ctx, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func projectInfo(t sbx.ProjectTemplate, tree sbx.TemplateInfo) sbx.TemplateInfo {
	return sbx.TemplateInfo{ID: t.ID, Name: t.Name, ProjectID: t.ProjectID, Versions: tree.Versions}
}

// Template is one template c may start sandboxes from, by the name of one
// of the server's own, or the name (in c's project) or ID of a project's.
func (m *Manager) Template(ctx context.Context, c sbx.Caller, ref string) (sbx.TemplateInfo, error) {
	all, err := m.Templates(ctx, c)
	if err != nil {
		return sbx.TemplateInfo{}, err
	}
	for _, t := range all {
		if t.ID == ref || (t.Name == ref && (t.ProjectID == "" || t.ProjectID == c.Project.ID)) {
			return t, nil
		}
	}
	return sbx.TemplateInfo{}, sbx.Errorf(sbx.ENotFound, "template %s does not exist on this server", ref)
}

// DeleteTemplate removes a template, every version of it, and its ready
// snapshots: one of the server's own is the operator's to delete, a
// project's is for whoever sees it. A template that anything stands on is
// a 409 naming it: sandboxes that are not over (a paused or hibernated one
// wakes on its tree; a warm pool's members count), snapshots (a restore
// reopens the tree of the version it lies on), a warm pool (which would
// start more), a ready snapshot being prepared, or a build under way. A
// create that races the deletion fails for want of the template, as one of
// a template never built does.
func (m *Manager) DeleteTemplate(ctx context.Context, c sbx.Caller, ref string) error {
	k, err := m.templateKeeper("delete templates")
	if err != nil {
		return err
	}
	t, err := m.changeable(ctx, c, ref, "deleting one of the server's own templates")
	if err != nil {
		return err
	}
	if _, err := m.store.GetPool(ctx, t.ID); err == nil {
		return sbx.Errorf(sbx.EConflict, "template %s has a warm pool: delete it first (DELETE /api/v1/admin/template-warm-pools/%s, `sbx pool rm %s`)", t.Name, t.ID, t.ID)
	} else if sbx.ErrorCode(err) != sbx.ENotFound {
		return err
	}
	m.mu.Lock()
	why, preparing := m.preparing[t.ID]
	m.mu.Unlock()
	if preparing && why == "" {
		return sbx.Errorf(sbx.EConflict, "template %s's ready snapshot is being prepared; delete the template once it is done", t.Name)
	}
	users, err := m.store.TemplateUsers(ctx, t.ID, templateUsersShown)
	if err != nil {
		return err
	}
	if len(users.Sandboxes) > 0 || len(users.Snapshots) > 0 {
		return sbx.Errorf(sbx.EConflict, "template %s is in use by %s: delete them first", t.Name, usersText(users))
	}
	if t.ProjectID != "" { // its name and ID stop resolving first
		if err := m.store.DeleteProjectTemplate(ctx, t.ID, m.clock.Now()); err != nil {
			return err
		}
	}
	readies, err := m.store.ReadySnapshots(ctx, t.ID)
	if err != nil {
		return err
	}
	for _, sn := range readies {
		if _, err := m.deleteSnapshot(ctx, sn); err != nil {
			return err
		}
	}
	if err := k.RemoveTemplate(ctx, t.ID); err != nil && !(t.ProjectID != "" && sbx.ErrorCode(err) == sbx.ENotFound) {
		return err // a project's template whose first build never finished has no tree
	}
	return m.store.DeleteTemplateTags(ctx, t.ID)
}

// TagTemplate points tag of a template c may change (one of the server's
// own: the operator's) at one of its versions ("": the current one), and
// answers the template.
func (m *Manager) TagTemplate(ctx context.Context, c sbx.Caller, ref, tag, version string) (sbx.TemplateInfo, error) {
	t, err := m.changeable(ctx, c, ref, "tagging one of the server's own templates")
	if err != nil {
		return t, err
	}
	if !sbx.ValidTemplateName(tag) {
		return t, sbx.Invalid("tag", "tag %q must be 1-64 lowercase letters, digits, '.', '_' or '-'", tag)
	}
	found := false
	for _, v := range t.Versions {
		if v.Version == version || (version == "" && v.Current) {
			version, found = v.Version, true
		}
	}
	if !found {
		return t, sbx.Errorf(sbx.ENotFound, "template %s has no version %s", t.Name, version)
	}
	if err := m.store.SetTemplateTag(ctx, t.ID, tag, version, m.clock.Now()); err != nil {
		return t, err
	}
	return m.Template(ctx, c, t.ID)
}

// UntagTemplate removes tag from a template c may change.
func (m *Manager) UntagTemplate(ctx context.Context, c sbx.Caller, ref, tag string) error {
	t, err := m.changeable(ctx, c, ref, "untagging one of the server's own templates")
	if err != nil {
		return err
	}
	if err := m.store.DeleteTemplateTags(ctx, t.ID, tag); err != nil {
		if sbx.ErrorCode(err) == sbx.ENotFound {
			return sbx.Errorf(sbx.ENotFound, "template %s has no tag %s", t.Name, tag)
		}
		return err
	}
	return nil
}

// changeable is a template c sees and may change: a project's, or one of
// the server's own with the operator's key.
func (m *Manager) changeable(ctx context.Context, c sbx.Caller, ref, what string) (sbx.TemplateInfo, error) {
	t, err := m.Template(ctx, c, ref)
	if err != nil {
		return t, err
	}
	if t.ProjectID == "" {
		if err := authz.Operator(c, what); err != nil {
			return t, err
		}
	}
	return t, nil
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

// resolveTemplate is the template a create of c names as ref, NAME or
// NAME:TAG: one of the server's own by its name (a project's names never
// shadow them), else the project's own, by its name or, in any project of
// c's org that c sees, by its ID; answered by its ID, which names its tree
// on the provider, and the version a tag names ("": the current one). The
// defaults of that template and version come too when the lookup read them
// (one of the server's own, untagged: the common create), else nil.
func (m *Manager) resolveTemplate(ctx context.Context, c sbx.Caller, d sbx.TemplateDefaulter, ref string) (id, version string, defaults *sbx.TemplateDefaults, err error) {
	name, tag, tagged := strings.Cut(ref, ":")
	id = name
	own, err := d.TemplateDefaults(ctx, name, "")
	if strings.HasPrefix(name, sbx.TemplateIDPrefix) || sbx.ErrorCode(err) == sbx.ENotFound {
		t, err := m.projectTemplate(ctx, c, name)
		switch {
		case sbx.ErrorCode(err) == sbx.ENotFound:
			return name, "", nil, nil // the provider says what it has
		case err != nil:
			return name, "", nil, err
		case t.Version == "":
			return name, "", nil, sbx.Errorf(sbx.EConflict, "template %s has no ready build yet", t.Name)
		}
		id = t.ID
	} else if err == nil && !tagged {
		return id, "", &own, nil
	}
	if !tagged {
		return id, "", nil, nil
	}
	tags, err := m.store.TemplateTags(ctx, id)
	if err != nil {
		return id, "", nil, err
	}
	v, ok := tags[tag]
	if !ok {
		return id, "", nil, sbx.Errorf(sbx.ENotFound, "template %s has no tag %s", name, tag)
	}
	return id, v, nil, nil
}

// projectTemplate is a template of c's org that c sees: by ID, or by name
// in c's project.
func (m *Manager) projectTemplate(ctx context.Context, c sbx.Caller, ref string) (sbx.ProjectTemplate, error) {
	t, err := m.store.GetProjectTemplate(ctx, c.Org.ID, c.Project.ID, ref)
	if err != nil {
		return t, err
	}
	if err := m.Sees(ctx, c, sbx.Sandbox{OrgID: t.OrgID, WorkspaceID: t.WorkspaceID, ProjectID: t.ProjectID}, ref); err != nil {
		return sbx.ProjectTemplate{}, sbx.Errorf(sbx.ENotFound, "template %s does not exist on this server", ref)
	}
	return t, nil
}

// CatalogTemplate is an entry of the catalog and, when the server has
// built it, the template.
type CatalogTemplate struct {
	sbx.CatalogEntry
	Built *sbx.TemplateInfo
}

// Catalog is the default provider's curated catalog, each entry with its
// template when the server has built it: what the create wizard offers.
func (m *Manager) Catalog(ctx context.Context, c sbx.Caller) ([]CatalogTemplate, error) {
	prov, err := m.provider(m.cfg.DefaultProvider)
	if err != nil {
		return nil, err
	}
	cat, ok := prov.(sbx.Cataloger)
	if !ok {
		return nil, sbx.Errorf(sbx.EUnsupported, "provider %s has no catalog of templates", prov.Name())
	}
	all, err := m.Templates(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []CatalogTemplate
	for _, e := range cat.Catalog() {
		ct := CatalogTemplate{CatalogEntry: e}
		for _, t := range all {
			if t.ProjectID == "" && t.Name == e.Name {
				ct.Built = &t
			}
		}
		out = append(out, ct)
	}
	return out, nil
}

// pinned settles a create of a tagged version: the current one is an
// ordinary create; another boots, since a warm pool's members and a ready
// snapshot are of the current version (a create that requires the pool is
// refused).
func (m *Manager) pinned(ctx context.Context, d sbx.TemplateDefaulter, req *CreateRequest) error {
	if req.templateVersion == "" {
		return nil
	}
	cur, err := d.TemplateDefaults(ctx, req.TemplateID, "")
	if err != nil {
		return err
	}
	if cur.Version == req.templateVersion {
		req.templateVersion = ""
		return nil
	}
	if req.PoolMode == sbx.PoolRequire {
		return sbx.Errorf(sbx.ENoWarmSandbox, "template %s's warm pool holds its current version, not %s", req.TemplateID, req.templateVersion)
	}
	req.cold, req.PoolMode = true, sbx.PoolBypass
	return nil
}
