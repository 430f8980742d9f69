package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/local/gpu"
	"github.com/sbxdev/sbx/local/network"
	"github.com/sbxdev/sbx/template"
)

// Admit implements sbx.Admitter: a template this host lacks, or GPUs it
// cannot place now, are refused before any row is written.
func (p *Provider) Admit(ctx context.Context, spec sbx.Spec) error {
	if spec.Snapshot != nil {
		if _, _, err := p.readSnapshot(*spec.Snapshot); err != nil {
			return err
		}
	} else if spec.Image == nil { // an image was resolved by ResolveImage; Create pulls it
		if _, err := p.cfg.Templates.At(spec.TemplateID, spec.TemplateVersion); err != nil {
			return p.noTemplate(spec.TemplateID, err)
		}
	}
	if spec.Resources.GPU == nil {
		return p.admitCreate(spec)
	}
	if err := p.engine.shareGPUs(); err != nil {
		return err
	}
	owner := "admit-" + spec.ProviderSandboxID
	if _, err := p.cfg.GPUs.Place(owner, *spec.Resources.GPU, nil); err != nil {
		return err
	}
	p.cfg.GPUs.Release(owner)
	return p.admitCreate(spec)
}

// noTemplate is a create's refusal of a template this host cannot start:
// for a tenant, that it does not exist and which do; how to build it is
// the operator's (the internal cause, logged).
func (p *Provider) noTemplate(name string, err error) error {
	if !errors.Is(err, template.ErrNotBuilt) {
		return sbx.Errorf(sbx.EInvalid, "%s", err.Error())
	}
	if errors.Is(err, template.ErrNoVersion) {
		return &sbx.Error{Code: sbx.ENotFound, Message: err.Error(), Err: err}
	}
	names := []string{}
	if built, lerr := p.cfg.Templates.List(); lerr == nil {
		for _, t := range built {
			names = append(names, t.Name)
		}
	}
	have := "none yet; ask the operator of this sbx to build one"
	if len(names) > 0 {
		have = strings.Join(names, ", ")
	}
	return &sbx.Error{Code: sbx.ENotFound, Message: fmt.Sprintf("template %s does not exist on this server; its templates: %s", name, have), Err: err}
}

// admitCreate admits the sandbox's writable layer on the host's disk (disk.go).
func (p *Provider) admitCreate(spec sbx.Spec) error {
	return p.admitDisk(spec.ProviderSandboxID, cmp.Or(spec.Resources.DiskMB, p.cfg.DiskMB)<<20, true, "create the sandbox")
}

// Create implements sbx.Provider: directory and record, network, GPU shares,
// root and bundle (as the engine has them), then `runsc run --detach` (or
// runc's). A failure undoes all of it.
func (p *Provider) Create(ctx context.Context, spec sbx.Spec) (_ sbx.Instance, err error) {
	defer func() { err = p.hide(err) }()
	if err := ctx.Err(); err != nil {
		return sbx.Instance{}, err
	}
	id := spec.ProviderSandboxID
	if !idPattern.MatchString(id) {
		return sbx.Instance{}, fmt.Errorf("sandbox ID %q is not one the local provider accepts", id)
	}
	from, err := p.source(ctx, spec)
	if err != nil {
		return sbx.Instance{}, err
	}
	end, err := p.begin(ctx, id)
	if err != nil {
		return sbx.Instance{}, err
	}
	defer end()
	defer p.dropPending(id) // from here on the record counts
	if err := p.claim(id); err != nil {
		return sbx.Instance{}, err
	}
	if from.pulled != "" {
		p.appendNote(id, "%s", from.pulled)
	}
	ok := false
	defer func() {
		if !ok {
			p.destroy(context.WithoutCancel(ctx), id)
		}
	}()
	m := meta{SandboxID: spec.SandboxID, ProviderID: id, Template: from.tmpl.Name, TemplateVersion: from.tmpl.Version, Engine: p.engine.name(),
		State: stateCreating, MemoryMB: spec.Resources.MemoryMB, DiskMB: cmp.Or(from.diskMB, spec.Resources.DiskMB, p.cfg.DiskMB),
		GPU: spec.Resources.GPU, Created: time.Now().UTC()}
	m.Flags = p.engine.flags(id, m.DiskMB, p.cfg.Network != nil)
	if err := p.writeMeta(m); err != nil { // first, so that a crash from here on leaves a record to clean up
		return sbx.Instance{}, err
	}
	netns := ""
	if p.cfg.Network != nil {
		a, err := p.cfg.Network.Attach(ctx, id, network.PolicyOf(spec.Egress))
		if err != nil {
			return sbx.Instance{}, err
		}
		netns = a.Netns
	}
	devices, err := p.placeGPUs(&m, nil)
	if err != nil {
		return sbx.Instance{}, err
	}
	rootfs, err := p.engine.root(id, from.tmpl.Rootfs())
	if err != nil {
		return sbx.Instance{}, err
	}
	bundle := OCISpec(spec, rootfs, p.cfg.Init, p.cgroupsPath(id), netns, devices)
	p.engine.adapt(bundle)
	args := []string{"run", "--detach", "--bundle", p.bundleDir(id), id}
	if from.saved != nil { // the source's process, root and mounts; its image
		bundle = restoreBundle(*from.saved, bundle)
		args = []string{"restore", "--detach", "--bundle", p.bundleDir(id), "--image-path", from.image, id}
	} else {
		vols, err := p.volumeMounts(spec.Volumes)
		if err != nil {
			return sbx.Instance{}, err
		}
		bundle.Mounts = append(bundle.Mounts, vols...)
		if p.agent != "" {
			withAgent(bundle, p.agent, from.tmpl)
		}
	}
	if err := os.Mkdir(p.bundleDir(id), 0o700); err != nil {
		return sbx.Instance{}, err
	}
	if err := writeJSON(filepath.Join(p.bundleDir(id), "config.json"), bundle); err != nil {
		return sbx.Instance{}, err
	}
	if err := p.start(ctx, m, spec.AccessToken, args...); err != nil {
		return sbx.Instance{}, err
	}
	m.State = stateRunning
	if err := p.writeMeta(m); err != nil {
		return sbx.Instance{}, err
	}
	ok = true
	return instance(m, sbx.InstanceRunning), nil
}

// claim makes a new sandbox's directory, unless its ID and another
// sandbox's on this host start one another: runsc takes an ID for any
// container it is a prefix of, and refuses IDs that could mean two.
func (p *Provider) claim(id string) error {
	p.claims.Lock()
	defer p.claims.Unlock()
	ids, err := p.sandboxIDs()
	if err != nil {
		return err
	}
	for _, other := range ids {
		if other != id && (strings.HasPrefix(other, id) || strings.HasPrefix(id, other)) {
			return fmt.Errorf("sandbox ID %q clashes with sandbox %q on this host: runsc needs IDs that do not start one another", id, other)
		}
	}
	if err := os.Mkdir(p.dir(id), 0o700); err != nil {
		return fmt.Errorf("sandbox directory: %w", err)
	}
	return nil
}

// start runs a command that starts the sandbox (run or restore) once its
// network holds its address again: runsc takes the address away each time.
// A run of a sandbox with an agent hands it token on tokenFD.
func (p *Provider) start(ctx context.Context, m meta, token string, args ...string) error {
	if p.cfg.Network != nil {
		a, ok := p.cfg.Network.Get(m.ProviderID)
		if !ok {
			return fmt.Errorf("sandbox %s has lost its network attachment", m.ProviderID)
		}
		if err := p.cfg.Network.Prepare(a); err != nil {
			return err
		}
	}
	output, err := os.OpenFile(p.outputFile(m.ProviderID), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer output.Close()
	note(output, "%s with %s (template %s version %s)", map[string]string{"run": "starting", "restore": "restoring"}[args[0]], p.rs.Name(), m.Template, m.TemplateVersion)
	var files []*os.File
	var w *os.File // the token pipe's write end, for watchToken once runsc holds the read end
	if p.agent != "" && args[0] == "run" {
		pipe, pw, err := tokenPipe(token)
		if err != nil {
			return err
		}
		defer pipe.Close()
		files, w = []*os.File{pipe}, pw // the sandbox's descriptor 3, tokenFD
		args = slices.Concat(args[:1], p.engine.passFiles(len(files)), args[1:])
	}
	if err := p.rs.StartWith(ctx, m.Flags, output, files, args...); err != nil {
		if w != nil {
			w.Close()
		}
		return err
	}
	if w != nil {
		files[0].Close() // the sandbox holds its own copy
		p.watchToken(m.ProviderID, w)
	}
	return p.privateFiles(m.ProviderID)
}

// placeGPUs places the GPU shares a sandbox asked for, preferring the cards
// in prefer, records them in m and returns the devices to pass to runsc.
func (p *Provider) placeGPUs(m *meta, prefer []string) ([]specs.LinuxDevice, error) {
	if m.GPU == nil {
		return nil, nil
	}
	pl, err := p.cfg.GPUs.Place(m.ProviderID, *m.GPU, prefer)
	if err != nil {
		return nil, err
	}
	m.GPUPlacement = &pl
	devices, err := gpu.OCIDevices(gpu.DeviceNodes(pl, p.cfg.GPUs.Inventory()))
	if err != nil {
		p.cfg.GPUs.Release(m.ProviderID)
		m.GPUPlacement = nil
		return nil, err
	}
	return devices, nil
}

// releaseGPUs gives a sandbox's GPU shares back.
func (p *Provider) releaseGPUs(m *meta) {
	p.cfg.GPUs.Release(m.ProviderID)
	m.GPUPlacement = nil
}

// origin is what a new sandbox starts from: a template's tree, booted; or,
// restored, a snapshot's image with the bundle it was taken with.
type origin struct {
	tmpl   template.Template
	saved  *specs.Spec // the snapshot's bundle; nil: a boot
	image  string      // the snapshot's image
	diskMB int64       // the snapshot's writable layer's cap, which its restore keeps
	pulled string      // for an image: whether this create pulled it, for the sandbox's log
}

// source finds what spec starts from: its snapshot, image or template.
func (p *Provider) source(ctx context.Context, spec sbx.Spec) (origin, error) {
	if spec.Snapshot == nil {
		t, pulled, err := p.template(ctx, spec)
		return origin{tmpl: t, pulled: pulled}, err
	}
	sm, saved, err := p.readSnapshot(*spec.Snapshot)
	if err != nil {
		return origin{}, err
	}
	id, _ := handleID(spec.Snapshot.Handle)
	if !sm.Memory { // a boot on the snapshot's tree
		t := template.Template{Name: sm.Template, Version: sm.TemplateVersion, StartCmd: sm.StartCmd, User: sm.User, Workdir: sm.Workdir, Dir: p.snapshotDir(id)}
		return origin{tmpl: t, diskMB: sm.DiskMB}, nil
	}
	t := template.Template{Name: sm.Template, Version: sm.TemplateVersion}
	if saved.Root != nil {
		t.Dir = filepath.Dir(saved.Root.Path)
	}
	return origin{tmpl: t, saved: &saved, image: filepath.Join(p.snapshotDir(id), "checkpoint"), diskMB: sm.DiskMB}, nil
}
