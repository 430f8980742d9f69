package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/template"
)

// Snapshots live in <DataDir>/snapshots/<sbx UUID>/: snapshot.json (what
// the source was: template and version, engine, sizes), config.json (the
// source's bundle, whose process, root and mounts a restore must repeat:
// its agent copy and its template tree are kept while a snapshot names
// them) and checkpoint/ (runsc's image: memory, processes and the writable
// layer). One image restores into any number of sandboxes, each with its
// own directory, network, cgroups and token; the image is only read. A
// files-only snapshot holds rootfs/ instead: the template's tree with the
// sandbox's writable layer laid over it (`runsc tar rootfs-upper`), which
// its sandboxes boot on as on a template's.

// snapshotMeta is what a snapshot's directory records of its source.
type snapshotMeta struct {
	ID              string    `json:"id"`
	Source          string    `json:"source"` // the source's provider ID
	Template        string    `json:"template"`
	TemplateVersion string    `json:"template_version"`
	Engine          string    `json:"engine"`
	MemoryMB        int64     `json:"memory_mb"`
	DiskMB          int64     `json:"disk_mb"`
	Memory          bool      `json:"memory"`
	StartCmd        string    `json:"start_cmd,omitempty"` // a files-only snapshot's sandboxes boot: its template's
	User            string    `json:"user,omitempty"`
	Workdir         string    `json:"workdir,omitempty"`
	Created         time.Time `json:"created"`
}

func (l layout) snapshotsDir() string { return filepath.Join(l.dataDir, "snapshots") }

func (l layout) snapshotDir(id string) string { return filepath.Join(l.snapshotsDir(), id) }

// Snapshot implements sbx.Snapshotter. A running sandbox is checkpointed
// with --leave-running: gVisor stops its kernel while the image is written
// and lets it go on after. A paused one is checkpointed as it stands and
// stays paused. A hibernated one already is an image: the snapshot's files
// are hard links to it.
func (p *Provider) Snapshot(ctx context.Context, h sbx.Handle, id string, memory bool) (_ sbx.SnapshotInfo, err error) {
	defer func() { err = p.hide(err) }()
	if err := p.engine.hibernate(); err != nil {
		return sbx.SnapshotInfo{}, err
	}
	if !idPattern.MatchString(id) {
		return sbx.SnapshotInfo{}, fmt.Errorf("snapshot ID %q is not one the local provider accepts", id)
	}
	m, end, err := p.load(ctx, h, stateRunning, statePaused, stateHibernated)
	if err != nil {
		return sbx.SnapshotInfo{}, err
	}
	defer end()
	if m.GPU != nil {
		return sbx.SnapshotInfo{}, sbx.Errorf(sbx.EUnsupported, "a sandbox with GPUs cannot be snapshotted: gVisor does not checkpoint a GPU's memory")
	}
	if err := p.awaitToken(ctx, m.ProviderID); err != nil {
		return sbx.SnapshotInfo{}, err
	}
	dir := p.snapshotDir(id)
	if err := os.MkdirAll(p.snapshotsDir(), 0o700); err != nil {
		return sbx.SnapshotInfo{}, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return sbx.SnapshotInfo{}, fmt.Errorf("snapshot directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	sm := snapshotMeta{ID: id, Source: m.ProviderID, Template: m.Template, TemplateVersion: m.TemplateVersion,
		Engine: m.Engine, MemoryMB: m.MemoryMB, DiskMB: m.DiskMB, Memory: memory, Created: time.Now().UTC()}
	if !memory {
		paused, err := p.snapshotFiles(ctx, m, &sm, dir)
		if err != nil {
			return sbx.SnapshotInfo{}, err
		}
		ok = true
		p.appendNote(m.ProviderID, "snapshot %s of its files taken", id)
		return sbx.SnapshotInfo{Handle: sbx.IDHandle(id), SizeBytes: diskUsed(dir, true), TemplateVersion: m.TemplateVersion, Paused: paused}, nil
	}
	if err := writeJSON(filepath.Join(dir, "snapshot.json"), sm); err != nil {
		return sbx.SnapshotInfo{}, err
	}
	var bundle specs.Spec
	if err := readJSON(filepath.Join(p.bundleDir(m.ProviderID), "config.json"), &bundle); err != nil {
		return sbx.SnapshotInfo{}, err
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), &bundle); err != nil {
		return sbx.SnapshotInfo{}, err
	}
	image := filepath.Join(dir, "checkpoint")
	var paused time.Duration
	if m.State == stateHibernated {
		err = template.LinkTree(p.imageDir(m.ProviderID), image) // privateTree below: 0700 and 0600
	} else {
		paused, err = p.checkpointLive(ctx, m, image)
	}
	if err != nil {
		return sbx.SnapshotInfo{}, err
	}
	if err := privateTree(dir); err != nil {
		return sbx.SnapshotInfo{}, err
	}
	ok = true
	p.appendNote(m.ProviderID, "snapshot %s taken; the sandbox stood still %s", id, paused.Round(time.Millisecond))
	return sbx.SnapshotInfo{Handle: sbx.IDHandle(id), SizeBytes: diskUsed(dir, false), TemplateVersion: m.TemplateVersion, Paused: paused}, nil
}

// checkpointLive writes a running or paused sandbox's image to image and
// leaves it as it was (gVisor's kernel counts its stops: a paused one stays
// paused); the time it took is how long the sandbox stood still.
func (p *Provider) checkpointLive(ctx context.Context, m meta, image string) (time.Duration, error) {
	if err := os.Mkdir(image, 0o700); err != nil { // before runsc, which would make it 0755
		return 0, err
	}
	start := time.Now()
	if _, err := p.rs.Run(ctx, m.Flags, "checkpoint", "--leave-running", "--image-path", image, "--compression=none", m.ProviderID); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// DeleteSnapshot implements sbx.Snapshotter.
func (p *Provider) DeleteSnapshot(ctx context.Context, id string) (err error) {
	defer func() { err = p.hide(err) }()
	if !idPattern.MatchString(id) {
		return fmt.Errorf("snapshot ID %q is not one the local provider accepts", id)
	}
	return os.RemoveAll(p.snapshotDir(id))
}

// Snapshots implements sbx.Snapshotter.
func (p *Provider) Snapshots(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(p.snapshotsDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && idPattern.MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// readSnapshot reads the record and bundle of the snapshot behind src.
func (p *Provider) readSnapshot(src sbx.SnapshotSource) (snapshotMeta, specs.Spec, error) {
	var sm snapshotMeta
	var bundle specs.Spec
	id, err := handleID(src.Handle)
	if err != nil {
		return sm, bundle, err
	}
	if err := readJSON(filepath.Join(p.snapshotDir(id), "snapshot.json"), &sm); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return sm, bundle, sbx.Errorf(sbx.ENotFound, "snapshot %s is not on this host", src.ID)
		}
		return sm, bundle, err
	}
	if engine := sm.Engine; engine != p.engine.name() {
		return sm, bundle, sbx.Errorf(sbx.EUnsupported, "snapshot %s was taken with %s; this host runs %s", src.ID, engine, p.engine.name())
	}
	if !sm.Memory {
		return sm, bundle, nil // its sandboxes boot: no bundle to repeat
	}
	return sm, bundle, readJSON(filepath.Join(p.snapshotDir(id), "config.json"), &bundle)
}

// restoreBundle is the bundle of a sandbox restored from a snapshot: its own
// (new's: network, cgroups, env, limits) but for what a restore must
// repeat of the source's: its process, root and mounts.
func restoreBundle(saved specs.Spec, fresh *specs.Spec) *specs.Spec {
	args, cwd, user := saved.Process.Args, saved.Process.Cwd, saved.Process.User
	fresh.Process.Args, fresh.Process.Cwd, fresh.Process.User = args, cwd, user
	fresh.Root, fresh.Mounts = saved.Root, saved.Mounts
	return fresh
}

// snapshotBundles are the bundles the snapshots on this host keep, whose
// agent copies must stay.
func (p *Provider) snapshotBundles() []specs.Spec {
	ids, _ := p.Snapshots(context.Background())
	var out []specs.Spec
	for _, id := range ids {
		var spec specs.Spec
		if readJSON(filepath.Join(p.snapshotDir(id), "config.json"), &spec) == nil {
			out = append(out, spec)
		}
	}
	return out
}

// diskUsed is what the regular files under dir hold on disk; with own,
// only those linked nowhere else (a files-only snapshot's, not its
// template's).
func diskUsed(dir string, own bool) int64 {
	var n int64
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok && (!own || st.Nlink == 1) {
					n += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return n
}

// snapshotFiles takes a files-only snapshot of a running or paused
// sandbox into dir: its template's tree with its writable layer laid over
// it. A hibernated sandbox's layer is in its memory image: it is refused.
func (p *Provider) snapshotFiles(ctx context.Context, m meta, sm *snapshotMeta, dir string) (time.Duration, error) {
	t, upper, took, err := p.upperLayer(ctx, m, dir)
	if err != nil {
		return took, err
	}
	defer upper.Close()
	sm.StartCmd, sm.User, sm.Workdir = t.StartCmd, t.User, t.Workdir
	if err := template.Layered(t, filepath.Join(dir, "rootfs"), upper); err != nil {
		return took, fmt.Errorf("laying the sandbox's files over its template's: %w", err)
	}
	return took, writeJSON(filepath.Join(dir, "snapshot.json"), sm)
}

// upperLayer is the template version a running or paused sandbox lies on
// and its writable layer (`runsc tar rootfs-upper`, written to a file in
// dir that is gone once upper is closed), and how long runsc took.
func (p *Provider) upperLayer(ctx context.Context, m meta, dir string) (template.Template, *os.File, time.Duration, error) {
	if m.State == stateHibernated {
		return template.Template{}, nil, 0, sbx.Errorf(sbx.EConflict, "a hibernated sandbox's files are in its memory image: resume it first, or take a snapshot with its memory")
	}
	t, err := p.cfg.Templates.Version(m.Template, m.TemplateVersion)
	if err != nil {
		if t, err = p.images().Version(m.Template, m.TemplateVersion); err != nil {
			return t, nil, 0, fmt.Errorf("the sandbox's template %s version %s: %w", m.Template, m.TemplateVersion, err)
		}
	}
	path := filepath.Join(dir, "upper.tar")
	start := time.Now()
	if _, err := p.rs.Run(ctx, m.Flags, "tar", "rootfs-upper", "--file", path, m.ProviderID); err != nil {
		os.Remove(path)
		return t, nil, 0, err
	}
	took := time.Since(start)
	f, err := os.Open(path)
	os.Remove(path) // open, it stays readable
	return t, f, took, err
}

// PublishTemplate implements sbx.TemplatePublisher: the running sandbox
// behind h, its writable layer laid over its template's tree, becomes a
// new version of template name in the provider's store. What meta leaves
// empty (start command, user, workdir, ports) is its template's.
func (p *Provider) PublishTemplate(ctx context.Context, h sbx.Handle, name string, meta sbx.TemplateMeta) (_ string, err error) {
	defer func() { err = p.hide(err) }()
	m, end, err := p.load(ctx, h, stateRunning, statePaused)
	if err != nil {
		return "", err
	}
	defer end()
	base, upper, _, err := p.upperLayer(ctx, m, p.dir(m.ProviderID))
	if err != nil {
		return "", err
	}
	defer upper.Close()
	t := template.Template{Name: name, Source: meta.Source, StartCmd: or(meta.StartCmd, base.StartCmd), User: or(meta.User, base.User),
		Workdir: or(meta.Workdir, base.Workdir), Ports: meta.Ports, Packages: base.Packages, Egress: base.Egress}
	if t.Ports == nil {
		t.Ports = base.Ports
	}
	t, err = p.cfg.Templates.PublishLayered(t, base, upper)
	if err != nil {
		return "", err
	}
	p.appendNote(m.ProviderID, "published as template %s version %s", name, t.Version)
	return t.Version, nil
}

// or is a, or b when a is empty.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
