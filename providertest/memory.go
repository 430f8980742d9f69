package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
)

// MemoryName is the Memory provider's name in the ledger.
const MemoryName = "memory"

// Memory is a provider for tests: its "compute" is a record per sandbox,
// kept in memory or, with a state directory, in files that outlive the
// process, so that a restarted server can adopt what an earlier one made.
// Templates whose name starts with "fail-" fail to create. It is an
// sbx.EgressSetter that records each sandbox's egress policy (Egress) and
// enforces nothing: its compute has no network at all. It is an
// sbx.Snapshotter whose snapshots are copies of a record (in
// <StateDir>/snapshots with a state directory), each restored as a new
// record whose log says so; an sbx.VolumeProvider whose volumes are
// directories, uncapped.
type Memory struct {
	opts    MemoryOptions
	mu      sync.Mutex
	mem     map[string]*record // without a state directory
	snaps   map[string]*record // without a state directory: snapshots by sbx UUID
	volDir  string             // volumes: a directory each (<StateDir>/volumes, or one of its own)
	watcher func(sbx.Died)     // set while Watch runs
}

// MemoryOptions configure a Memory provider.
type MemoryOptions struct {
	StateDir    string        // when set, records live in files here
	CreateDelay time.Duration // how long a create takes
	// FailRestore, when set, says which restores from a snapshot fail
	// (called with the new sandbox's sbx UUID).
	FailRestore func(sandboxID string) bool
}

// record is one piece of fake compute.
type record struct {
	SandboxID  string             `json:"sandbox_id"`
	ProviderID string             `json:"provider_id"`
	Template   string             `json:"template"`
	Status     sbx.InstanceStatus `json:"status"`
	Egress     sbx.Egress         `json:"egress"`
	Created    time.Time          `json:"created"`
	Log        []sbx.LogLine      `json:"log"`
}

// NewMemory returns a Memory provider.
func NewMemory(opts MemoryOptions) *Memory {
	return &Memory{opts: opts, mem: map[string]*record{}, snaps: map[string]*record{}}
}

// Name implements sbx.Provider.
func (m *Memory) Name() string { return MemoryName }

// Capabilities implements sbx.Provider.
func (m *Memory) Capabilities() sbx.Capabilities {
	return sbx.Capabilities{MemoryPause: true, Hibernate: true, Snapshots: true, Fork: true, Volumes: true}
}

// Create implements sbx.Provider.
func (m *Memory) Create(ctx context.Context, spec sbx.Spec) (sbx.Instance, error) {
	if strings.HasPrefix(spec.TemplateID, "fail-") {
		return sbx.Instance{}, fmt.Errorf("template %s failed to start: its start command exited with status 1", spec.TemplateID)
	}
	if spec.SandboxID == "" || spec.ProviderSandboxID == "" {
		return sbx.Instance{}, errors.New("spec needs a sandbox ID and a provider sandbox ID")
	}
	if err := ctx.Err(); err != nil {
		return sbx.Instance{}, err
	}
	select {
	case <-time.After(m.opts.CreateDelay):
	case <-ctx.Done():
		return sbx.Instance{}, ctx.Err()
	}
	now := time.Now().UTC()
	r := &record{SandboxID: spec.SandboxID, ProviderID: spec.ProviderSandboxID, Template: spec.TemplateID, Status: sbx.InstanceRunning, Created: now,
		Egress: spec.Egress,
		Log:    []sbx.LogLine{{At: now, Source: "stdout", Line: "booted template " + spec.TemplateID}}}
	m.mu.Lock()
	defer m.mu.Unlock()
	if src := spec.Snapshot; src != nil {
		snap, err := m.loadSnapshot(src.ID)
		if err != nil {
			return sbx.Instance{}, err
		}
		if m.opts.FailRestore != nil && m.opts.FailRestore(spec.SandboxID) {
			return sbx.Instance{}, fmt.Errorf("restoring snapshot %s failed", src.ID)
		}
		r.Template, r.Log = snap.Template, append(snap.Log, sbx.LogLine{At: now, Source: "stdout", Line: "restored from snapshot " + src.ID})
	}
	if _, err := m.load(r.ProviderID); err == nil {
		return sbx.Instance{}, fmt.Errorf("sandbox %s already exists", r.ProviderID)
	}
	if err := m.save(r); err != nil {
		return sbx.Instance{}, err
	}
	return r.instance(), nil
}

// Pause implements sbx.Provider.
func (m *Memory) Pause(ctx context.Context, h sbx.Handle) error {
	_, err := m.change(h, sbx.InstancePaused, "paused", sbx.InstanceRunning)
	return err
}

// Hibernate implements sbx.Hibernator.
func (m *Memory) Hibernate(ctx context.Context, h sbx.Handle) error {
	_, err := m.change(h, sbx.InstanceHibernated, "hibernated", sbx.InstanceRunning, sbx.InstancePaused)
	return err
}

// Resume implements sbx.Provider.
func (m *Memory) Resume(ctx context.Context, h sbx.Handle) (sbx.Handle, error) {
	r, err := m.change(h, sbx.InstanceRunning, "resumed", sbx.InstancePaused, sbx.InstanceHibernated)
	if err != nil {
		return sbx.Handle{}, err
	}
	return r.instance().Handle, nil
}

// SetEgress implements sbx.EgressSetter: the policy is recorded, for
// Egress, on a sandbox that runs, is paused or hibernated.
func (m *Memory) SetEgress(ctx context.Context, h sbx.Handle, e sbx.Egress) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.load(id)
	if err != nil {
		return err
	}
	if r.Status == sbx.InstanceDead {
		return fmt.Errorf("sandbox %s is dead", id)
	}
	r.Egress = e
	r.Log = append(r.Log, sbx.LogLine{At: time.Now().UTC(), Source: "stdout", Line: "egress policy: " + e.String()})
	return m.save(r)
}

// Egress is the egress policy a sandbox was made with or last given.
func (m *Memory) Egress(providerID string) (sbx.Egress, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.load(providerID)
	if err != nil {
		return sbx.Egress{}, err
	}
	return r.Egress, nil
}

// Kill implements sbx.Provider; killing what is gone is not an error.
func (m *Memory) Kill(ctx context.Context, h sbx.Handle) error {
	id, err := handleID(h)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opts.StateDir == "" {
		delete(m.mem, id)
		return nil
	}
	if err := os.Remove(m.file(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// List implements sbx.Provider.
func (m *Memory) List(ctx context.Context) ([]sbx.Instance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	if m.opts.StateDir == "" {
		for id := range m.mem {
			ids = append(ids, id)
		}
	} else {
		files, err := filepath.Glob(filepath.Join(m.opts.StateDir, "*.json"))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			ids = append(ids, strings.TrimSuffix(filepath.Base(f), ".json"))
		}
	}
	sort.Strings(ids)
	out := make([]sbx.Instance, 0, len(ids))
	for _, id := range ids {
		r, err := m.load(id)
		if err != nil {
			return nil, err
		}
		out = append(out, r.instance())
	}
	return out, nil
}

// Logs implements sbx.LogReader.
func (m *Memory) Logs(ctx context.Context, h sbx.Handle) ([]sbx.LogLine, error) {
	r, err := m.get(h)
	if err != nil {
		return nil, err
	}
	return r.Log, nil
}

// Metrics implements sbx.MetricsReader: one process, time since creation as CPU time.
func (m *Memory) Metrics(ctx context.Context, h sbx.Handle) (sbx.Metrics, error) {
	r, err := m.get(h)
	if err != nil {
		return sbx.Metrics{}, err
	}
	now := time.Now().UTC()
	return sbx.Metrics{At: now, CPUSeconds: now.Sub(r.Created).Seconds(), MemoryBytes: 1 << 20, Processes: 1}, nil
}

// Crash marks a sandbox's compute as dead, as if its process had exited,
// and tells Watch when it runs.
func (m *Memory) Crash(providerID string) error {
	m.mu.Lock()
	r, err := m.load(providerID)
	if err == nil {
		r.Status = sbx.InstanceDead
		err = m.save(r)
	}
	died := m.watcher
	m.mu.Unlock()
	if err == nil && died != nil {
		died(sbx.Died{ProviderSandboxID: providerID, Diagnostic: "the sandbox crashed"})
	}
	return err
}

// Watch implements sbx.Watcher: Crash reports to died until ctx ends.
func (m *Memory) Watch(ctx context.Context, died func(sbx.Died)) {
	m.mu.Lock()
	m.watcher = died
	m.mu.Unlock()
	<-ctx.Done()
	m.mu.Lock()
	m.watcher = nil
	m.mu.Unlock()
}

func (m *Memory) get(h sbx.Handle) (*record, error) {
	id, err := handleID(h)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.load(id)
}

// change moves a record from one of the statuses from to status to.
func (m *Memory) change(h sbx.Handle, to sbx.InstanceStatus, line string, from ...sbx.InstanceStatus) (*record, error) {
	id, err := handleID(h)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, err := m.load(id)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(from, r.Status) {
		return nil, fmt.Errorf("sandbox %s is %s, not %v", id, r.Status, from)
	}
	r.Status = to
	r.Log = append(r.Log, sbx.LogLine{At: time.Now().UTC(), Source: "stdout", Line: line})
	return r, m.save(r)
}

func (m *Memory) load(id string) (*record, error) {
	if m.opts.StateDir == "" {
		r, ok := m.mem[id]
		if !ok {
			return nil, fmt.Errorf("sandbox %s: %w", id, os.ErrNotExist)
		}
		c := *r
		return &c, nil
	}
	data, err := os.ReadFile(m.file(id))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", id, err)
	}
	var r record
	return &r, json.Unmarshal(data, &r)
}

func (m *Memory) save(r *record) error {
	if m.opts.StateDir == "" {
		m.mem[r.ProviderID] = r
		return nil
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := m.file(r.ProviderID) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, m.file(r.ProviderID))
}

func (m *Memory) file(id string) string { return filepath.Join(m.opts.StateDir, id+".json") }

func (r *record) instance() sbx.Instance {
	return sbx.Instance{SandboxID: r.SandboxID, ProviderSandboxID: r.ProviderID, Status: r.Status, Handle: sbx.IDHandle(r.ProviderID)}
}

func handleID(h sbx.Handle) (string, error) {
	return sbx.HandleID(h, func(id string) bool { return !strings.ContainsAny(id, "/.") })
}

// Snapshot implements sbx.Snapshotter: a copy of the record.
func (m *Memory) Snapshot(ctx context.Context, h sbx.Handle, id string, memory bool) (sbx.SnapshotInfo, error) {
	r, err := m.get(h)
	if err != nil {
		return sbx.SnapshotInfo{}, err
	}
	if r.Status == sbx.InstanceDead {
		return sbx.SnapshotInfo{}, fmt.Errorf("sandbox %s is dead", r.ProviderID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opts.StateDir == "" {
		m.snaps[id] = r
	} else if err := writeFile(m.snapshotFile(id), r); err != nil {
		return sbx.SnapshotInfo{}, err
	}
	return sbx.SnapshotInfo{Handle: sbx.IDHandle(id), SizeBytes: 1 << 30, TemplateVersion: "1"}, nil
}

// DeleteSnapshot implements sbx.Snapshotter.
func (m *Memory) DeleteSnapshot(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.snaps, id)
	if m.opts.StateDir != "" {
		if err := os.Remove(m.snapshotFile(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Snapshots implements sbx.Snapshotter.
func (m *Memory) Snapshots(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []string
	if m.opts.StateDir == "" {
		for id := range m.snaps {
			ids = append(ids, id)
		}
		return ids, nil
	}
	files, err := filepath.Glob(filepath.Join(m.opts.StateDir, "snapshots", "*.json"))
	for _, f := range files {
		ids = append(ids, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	return ids, err
}

func (m *Memory) loadSnapshot(id string) (*record, error) {
	if m.opts.StateDir == "" {
		r, ok := m.snaps[id]
		if !ok {
			return nil, fmt.Errorf("snapshot %s: %w", id, os.ErrNotExist)
		}
		return r, nil
	}
	data, err := os.ReadFile(m.snapshotFile(id))
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	var r record
	return &r, json.Unmarshal(data, &r)
}

func (m *Memory) snapshotFile(id string) string {
	return filepath.Join(m.opts.StateDir, "snapshots", id+".json")
}

// writeFile writes v as JSON to path, its directory made first.
func writeFile(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// CreateVolume implements sbx.VolumeProvider: a directory.
func (m *Memory) CreateVolume(ctx context.Context, id string, sizeMB int64) error {
	return os.MkdirAll(m.volume(id), 0o700)
}

// ResizeVolume implements sbx.VolumeProvider.
func (m *Memory) ResizeVolume(ctx context.Context, id string, sizeMB int64) error {
	_, err := os.Stat(m.volume(id))
	return err
}

// DeleteVolume implements sbx.VolumeProvider.
func (m *Memory) DeleteVolume(ctx context.Context, id string) error {
	return os.RemoveAll(m.volume(id))
}

// Volumes implements sbx.VolumeProvider.
func (m *Memory) Volumes(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(m.volume(""))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids, err
}

// VolumeRoot implements sbx.VolumeProvider.
func (m *Memory) VolumeRoot(ctx context.Context, id string) (*os.Root, error) {
	return os.OpenRoot(m.volume(id))
}

// CheckMount implements sbx.VolumeProvider: any path but /proc's.
func (m *Memory) CheckMount(ctx context.Context, template, path string) error {
	if strings.HasPrefix(path, "/proc") {
		return sbx.Invalid("volumes", "a volume cannot be mounted at %s", path)
	}
	return nil
}

// volume is the directory of volume id ("" : of them all).
func (m *Memory) volume(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.volDir == "" {
		m.volDir = filepath.Join(m.opts.StateDir, "volumes")
		if m.opts.StateDir == "" {
			m.volDir, _ = os.MkdirTemp("", "sbx-memory-volumes-")
		}
	}
	return filepath.Join(m.volDir, id)
}
