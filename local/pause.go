package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sbxdev/sbx"
)

// Pause implements sbx.Provider: the sandbox is frozen, its memory, its
// processes and its GPU shares kept.
func (p *Provider) Pause(ctx context.Context, h sbx.Handle) (err error) {
	defer func() { err = p.hide(err) }()
	m, end, err := p.load(ctx, h, stateRunning)
	if err != nil {
		return err
	}
	defer end()
	if _, err := p.rs.Run(ctx, nil, "pause", m.ProviderID); err != nil {
		return err
	}
	m.State = statePaused
	return p.writeMeta(m)
}

// Hibernate implements sbx.Hibernator: the sandbox's memory, processes and
// writable layer are checkpointed into its directory, then its runsc
// container goes, with its memory and GPU shares. Its network stays, so
// that it wakes with the same address.
func (p *Provider) Hibernate(ctx context.Context, h sbx.Handle) (err error) {
	defer func() { err = p.hide(err) }()
	if err := p.engine.hibernate(); err != nil {
		return err
	}
	m, end, err := p.load(ctx, h, stateRunning, statePaused)
	if err != nil {
		return err
	}
	defer end()
	if err := p.awaitToken(ctx, m.ProviderID); err != nil {
		return err
	}
	image := p.imageDir(m.ProviderID)
	if err := os.RemoveAll(image); err != nil {
		return err
	}
	if err := os.Mkdir(image, 0o700); err != nil { // before runsc, which would make it 0755
		return err
	}
	if _, err := p.rs.Run(ctx, m.Flags, "checkpoint", "--image-path", image, "--compression=none", m.ProviderID); err != nil {
		return err
	}
	if err := p.privateFiles(m.ProviderID); err != nil {
		return err
	}
	// From here the checkpoint is the sandbox: record that before anything can fail.
	m.State = stateHibernated
	p.releaseGPUs(&m)
	if err := p.writeMeta(m); err != nil {
		return err
	}
	p.appendNote(m.ProviderID, "hibernated")
	return p.deleteContainer(ctx, m.ProviderID) // it was just checkpointed: no lookup needed
}

// Resume implements sbx.Provider: a paused sandbox continues; a hibernated
// one is restored from its checkpoint, its GPU shares placed again
// (preferring the cards it had).
func (p *Provider) Resume(ctx context.Context, h sbx.Handle) (_ sbx.Handle, err error) {
	defer func() { err = p.hide(err) }()
	m, end, err := p.load(ctx, h, statePaused, stateHibernated)
	if err != nil {
		return sbx.Handle{}, err
	}
	defer end()
	defer p.dropPending(m.ProviderID) // the share AdmitResume held: from here on the record counts
	if m.State == statePaused {
		if _, err := p.rs.Run(ctx, nil, "resume", m.ProviderID); err != nil {
			return sbx.Handle{}, err
		}
	} else if err := p.wake(ctx, &m); err != nil {
		return sbx.Handle{}, err
	}
	m.State = stateRunning
	if err := p.writeMeta(m); err != nil {
		return sbx.Handle{}, err
	}
	return h, nil
}

// wake restores a hibernated sandbox and removes its checkpoint.
func (p *Provider) wake(ctx context.Context, m *meta) error {
	var prefer []string
	if m.GPUPlacement != nil {
		for _, s := range m.GPUPlacement.Shares {
			prefer = append(prefer, s.UUID)
		}
	}
	devices, err := p.placeGPUs(m, prefer)
	if err != nil {
		return err
	}
	if err := p.setDevices(m.ProviderID, devices); err != nil {
		p.releaseGPUs(m)
		return err
	}
	if err := p.removeContainer(ctx, m.ProviderID); err != nil { // what a failed wake may have left
		return err
	}
	image := p.imageDir(m.ProviderID)
	if err := p.start(ctx, *m, "", "restore", "--detach", "--bundle", p.bundleDir(m.ProviderID), "--image-path", image, m.ProviderID); err != nil {
		p.releaseGPUs(m)
		p.removeContainer(context.WithoutCancel(ctx), m.ProviderID)
		return err
	}
	return os.RemoveAll(image)
}

// setDevices rewrites the devices of a sandbox's bundle, for the GPU cards it
// wakes on.
func (p *Provider) setDevices(id string, devices []specs.LinuxDevice) error {
	path := filepath.Join(p.bundleDir(id), "config.json")
	var spec specs.Spec
	if err := readJSON(path, &spec); err != nil {
		return err
	}
	if len(spec.Linux.Devices) == 0 && len(devices) == 0 {
		return nil
	}
	spec.Linux.Devices = devices
	return writeJSON(path, &spec)
}

// load reads the record behind a handle, checks that the sandbox is in one of
// the states from, and marks it busy until end is called.
func (p *Provider) load(ctx context.Context, h sbx.Handle, from ...string) (m meta, end func(), err error) {
	id, err := handleID(h)
	if err != nil {
		return m, nil, err
	}
	if end, err = p.begin(ctx, id); err != nil {
		return m, nil, err
	}
	if m, err = p.readMeta(id); err != nil {
		end()
		if os.IsNotExist(err) {
			return m, nil, fmt.Errorf("sandbox %s does not exist on this host", id)
		}
		return m, nil, err
	}
	if !slices.Contains(from, m.State) {
		end()
		return m, nil, fmt.Errorf("sandbox %s is %s, not %s", id, m.State, from[0])
	}
	return m, end, nil
}

// appendNote adds a provider line to a sandbox's output.log.
func (p *Provider) appendNote(id, format string, args ...any) {
	f, err := os.OpenFile(p.outputFile(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	note(f, format, args...)
}
