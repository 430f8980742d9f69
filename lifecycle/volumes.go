package lifecycle

import (
	"context"
	"fmt"
	"os"
	"path"
	"regexp"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
)

// volumeStore: volumes' rows, and what a sandbox mounts.
type volumeStore interface {
	InsertVolume(ctx context.Context, v sbx.Volume) error
	GetVolume(ctx context.Context, orgID, projectID, ref string) (sbx.Volume, error)
	ListVolumes(ctx context.Context, f sbx.VolumeFilter) ([]sbx.Volume, string, error)
	UpdateVolume(ctx context.Context, id string, now time.Time, fn func(v *sbx.Volume, users []string) error) (sbx.Volume, error)
	SandboxVolumes(ctx context.Context, sandboxID string) ([]sbx.VolumeMount, error)
	LiveVolumes(ctx context.Context, provider string) ([]sbx.Volume, error)
}

// MaxVolumes is the most volumes one sandbox mounts.
const MaxVolumes = 8

// volumeName is what a volume's name looks like.
var volumeName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// VolumeAsk is a volume a create mounts, as the caller names it.
type VolumeAsk struct {
	Name     string
	Path     string
	ReadOnly bool
}

// CheckVolumes checks a create's volumes, given in field.
func CheckVolumes(p *sbx.Problems, field string, asks []VolumeAsk) {
	if len(asks) > MaxVolumes {
		p.Add(field, "at most %d volumes", MaxVolumes)
	}
	paths, names := map[string]bool{}, map[string]bool{}
	for i, a := range asks {
		f := fmt.Sprintf("%s[%d]", field, i)
		if !volumeName.MatchString(a.Name) {
			p.Add(f+".name", "name %q is not a volume's name (1-64 lowercase letters, digits, '.', '_' or '-')", a.Name)
		}
		if !path.IsAbs(a.Path) || path.Clean(a.Path) != a.Path || len(a.Path) > 255 {
			p.Add(f+".path", "path %q must be an absolute, clean path", a.Path)
		}
		if paths[a.Path] || names[a.Name] {
			p.Add(f, "each volume and each path once")
		}
		paths[a.Path], names[a.Name] = true, true
	}
}

// volumer is the default provider as a keeper of volumes, or the 501.
func (m *Manager) volumer() (sbx.VolumeProvider, string, error) {
	p, err := m.provider(m.cfg.DefaultProvider)
	if err != nil {
		return nil, "", err
	}
	v, ok := p.(sbx.VolumeProvider)
	if !ok || !p.Capabilities().Volumes {
		return nil, "", sbx.Errorf(sbx.EUnsupported, "provider %s keeps no volumes", p.Name())
	}
	return v, p.Name(), nil
}

// CreateVolume makes a volume of sizeMB in c's project: its row first
// (creating, which no create mounts), then the provider's volume, then the
// row settled ready (or deleted, when the provider failed). A restart in
// between leaves a creating row, which reconcile deletes with whatever the
// provider made.
func (m *Manager) CreateVolume(ctx context.Context, c sbx.Caller, name string, sizeMB int64) (sbx.Volume, error) {
	var p sbx.Problems
	if !volumeName.MatchString(name) {
		p.Add("name", "name %q is not a volume's name (1-64 lowercase letters, digits, '.', '_' or '-')", name)
	}
	if sizeMB < 1 || sizeMB > m.cfg.Limits.MaxDiskMB {
		p.Add("sizeMB", "sizeMB must be between 1 and %d", m.cfg.Limits.MaxDiskMB)
	}
	if err := p.Err(); err != nil {
		return sbx.Volume{}, err
	}
	vp, provider, err := m.volumer()
	if err != nil {
		return sbx.Volume{}, err
	}
	if _, err := m.store.GetVolume(ctx, c.Org.ID, c.Project.ID, name); err == nil {
		return sbx.Volume{}, sbx.Errorf(sbx.EConflict, "a volume named %s already exists in this project", name)
	}
	v := sbx.Volume{ID: uuid.NewString(), OrgID: c.Org.ID, WorkspaceID: c.Workspace.ID, ProjectID: c.Project.ID, Name: name,
		Provider: provider, SizeMB: sizeMB, State: sbx.VolumeCreating, CreatedAt: m.clock.Now()}
	if err := m.store.InsertVolume(ctx, v); err != nil {
		return sbx.Volume{}, err
	}
	ctx = context.WithoutCancel(ctx) // the row is written: settle it, whatever the caller does
	made := vp.CreateVolume(ctx, v.ID, sizeMB)
	v, err = m.store.UpdateVolume(ctx, v.ID, m.clock.Now(), func(v *sbx.Volume, _ []string) error {
		v.State = sbx.VolumeReady
		if made != nil {
			v.State, v.DeletedAt = sbx.VolumeDeleted, m.clock.Now()
		}
		return nil
	})
	if made != nil {
		return v, sbx.Errorf(sbx.EProvider, "could not create volume %s: %s", name, providerMessage(made))
	}
	return v, err
}

// GetVolume reads a volume the caller's key reaches, by ID or by name in
// the caller's project.
func (m *Manager) GetVolume(ctx context.Context, c sbx.Caller, ref string) (sbx.Volume, error) {
	v, err := m.store.GetVolume(ctx, c.Org.ID, c.Project.ID, ref)
	if err != nil {
		return v, err
	}
	if err := m.Sees(ctx, c, sbx.Sandbox{OrgID: v.OrgID, WorkspaceID: v.WorkspaceID, ProjectID: v.ProjectID}, ref); err != nil {
		return sbx.Volume{}, sbx.Errorf(sbx.ENotFound, "volume %s not found", ref)
	}
	return v, nil
}

// ListVolumes lists the volumes the caller's key reaches.
func (m *Manager) ListVolumes(ctx context.Context, c sbx.Caller, page sbx.Page) ([]sbx.Volume, string, error) {
	f := sbx.VolumeFilter{OrgID: c.Org.ID, Page: page}
	if c.MemberScoped() {
		f.MemberID = c.User.ID
	}
	if !c.OrgWide() {
		f.ProjectID = c.Key.ProjectID
	}
	return m.store.ListVolumes(ctx, f)
}

// inUse is the 409 of a change of a volume that sandboxes mount.
func inUse(v *sbx.Volume, users []string, verb string) error {
	if len(users) == 0 {
		return nil
	}
	return sbx.Errorf(sbx.EConflict, "cannot %s volume %s: sandboxes %v mount it; delete them first", verb, v.Name, users)
}

// ResizeVolume grows a volume no sandbox mounts to sizeMB. It is resizing
// (creates that mount it are refused) while the provider grows it.
func (m *Manager) ResizeVolume(ctx context.Context, c sbx.Caller, ref string, sizeMB int64) (sbx.Volume, error) {
	v, err := m.GetVolume(ctx, c, ref)
	if err != nil {
		return v, err
	}
	vp, _, err := m.volumer()
	if err != nil {
		return v, err
	}
	if sizeMB <= v.SizeMB || sizeMB > m.cfg.Limits.MaxDiskMB {
		return v, sbx.Invalid("sizeMB", "a volume grows: sizeMB must be more than its %d and at most %d", v.SizeMB, m.cfg.Limits.MaxDiskMB)
	}
	if _, err := m.store.UpdateVolume(ctx, v.ID, m.clock.Now(), func(v *sbx.Volume, users []string) error {
		if v.State != sbx.VolumeReady {
			return sbx.Errorf(sbx.EConflict, "volume %s is %s", v.Name, v.State)
		}
		v.State = sbx.VolumeResizing
		return inUse(v, users, "resize")
	}); err != nil {
		return v, err
	}
	ctx = context.WithoutCancel(ctx)
	resized := vp.ResizeVolume(ctx, v.ID, sizeMB)
	v, err = m.store.UpdateVolume(ctx, v.ID, m.clock.Now(), func(v *sbx.Volume, _ []string) error {
		v.State = sbx.VolumeReady
		if resized == nil {
			v.SizeMB = sizeMB
		}
		return nil
	})
	if resized != nil {
		return v, sbx.Errorf(sbx.EProvider, "could not resize volume %s: %s", v.Name, providerMessage(resized))
	}
	return v, err
}

// DeleteVolume deletes a volume no sandbox mounts, with its data: the row
// first, in the transaction that checks its users (so no create mounts it
// after), then the provider's volume (reconcile removes it after a restart
// in between).
func (m *Manager) DeleteVolume(ctx context.Context, c sbx.Caller, ref string) (sbx.Volume, error) {
	v, err := m.GetVolume(ctx, c, ref)
	if err != nil {
		return v, err
	}
	vp, _, err := m.volumer()
	if err != nil {
		return v, err
	}
	v, err = m.store.UpdateVolume(ctx, v.ID, m.clock.Now(), func(v *sbx.Volume, users []string) error {
		if v.State != sbx.VolumeReady {
			return sbx.Errorf(sbx.EConflict, "volume %s is %s", v.Name, v.State)
		}
		v.State, v.DeletedAt = sbx.VolumeDeleted, m.clock.Now()
		return inUse(v, users, "delete")
	})
	if err != nil {
		return v, err
	}
	if err := vp.DeleteVolume(context.WithoutCancel(ctx), v.ID); err != nil {
		m.log.Warn("deleting a volume's data", "volume", v.ID, "err", err)
	}
	return v, nil
}

// VolumeRoot opens the files of a volume the caller's key reaches.
func (m *Manager) VolumeRoot(ctx context.Context, c sbx.Caller, ref string) (*os.Root, error) {
	v, err := m.GetVolume(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	vp, _, err := m.volumer()
	if err != nil {
		return nil, err
	}
	return vp.VolumeRoot(ctx, v.ID)
}

// mounts resolves a create's volumes, in the project of c, at paths the
// provider can mount them at in template.
func (m *Manager) mounts(ctx context.Context, c sbx.Caller, p sbx.Provider, template string, asks []VolumeAsk) ([]sbx.VolumeMount, error) {
	if len(asks) == 0 {
		return nil, nil
	}
	vp, ok := p.(sbx.VolumeProvider)
	if !ok || !p.Capabilities().Volumes {
		return nil, sbx.Errorf(sbx.EUnsupported, "provider %s keeps no volumes", p.Name())
	}
	var out []sbx.VolumeMount
	for _, a := range asks {
		v, err := m.store.GetVolume(ctx, c.Org.ID, c.Project.ID, a.Name)
		if err != nil {
			return nil, err
		}
		if err := vp.CheckMount(ctx, template, a.Path); err != nil {
			return nil, err
		}
		out = append(out, sbx.VolumeMount{VolumeID: v.ID, Name: v.Name, Path: a.Path, ReadOnly: a.ReadOnly})
	}
	return out, nil
}

// reconcileVolumes finishes what a restart cut short: a volume being
// created is deleted, one being resized is ready again, and the provider's
// volumes no live row owns are removed.
func (m *Manager) reconcileVolumes(ctx context.Context, p sbx.Provider) error {
	vp, ok := p.(sbx.VolumeProvider)
	if !ok {
		return nil
	}
	ids, err := vp.Volumes(ctx)
	if err != nil {
		return err
	}
	rows, err := m.store.LiveVolumes(ctx, p.Name())
	if err != nil {
		return err
	}
	live := map[string]bool{}
	for _, v := range rows {
		if v.State == sbx.VolumeCreating { // its create was cut short: it goes
			if _, err := m.store.UpdateVolume(ctx, v.ID, m.clock.Now(), func(v *sbx.Volume, _ []string) error {
				v.State, v.DeletedAt = sbx.VolumeDeleted, m.clock.Now()
				return nil
			}); err != nil {
				return err
			}
			continue // not live: removed below if the provider made it
		}
		live[v.ID] = true
		if v.State == sbx.VolumeResizing { // its resize was cut short: the provider mounts it again at start
			if _, err := m.store.UpdateVolume(ctx, v.ID, m.clock.Now(), func(v *sbx.Volume, _ []string) error { v.State = sbx.VolumeReady; return nil }); err != nil {
				return err
			}
		}
	}
	for _, id := range ids {
		if !live[id] {
			m.log.Warn("reconcile: removing a volume the ledger does not own", "provider", p.Name(), "volume", id)
			if err := vp.DeleteVolume(ctx, id); err != nil {
				return fmt.Errorf("removing orphan volume %s: %w", id, err)
			}
		}
	}
	return nil
}
