package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/agentcall"
)

// snapshotStore: snapshots' rows and their storage's settlement.
type snapshotStore interface {
	InsertSnapshot(ctx context.Context, sn sbx.Snapshot) error
	GetSnapshot(ctx context.Context, orgID, id string) (sbx.Snapshot, error)
	UpdateSnapshot(ctx context.Context, id string, now time.Time, fn func(*sbx.Snapshot) error) (sbx.Snapshot, error)
	ListSnapshots(ctx context.Context, f sbx.SnapshotFilter) ([]sbx.Snapshot, string, error)
	OpenSnapshots(ctx context.Context, provider string) ([]sbx.Snapshot, error)
	ReadySnapshots(ctx context.Context, templateID string) ([]sbx.Snapshot, error)
}

// SnapshotRequest is a request for a snapshot of a sandbox.
type SnapshotRequest struct {
	Name     string
	Metadata map[string]string
	// Memory: the sandbox's memory and processes too (the default);
	// without, its files alone.
	Memory bool
}

// Snapshot captures a running or paused sandbox, which goes on as it was.
func (m *Manager) Snapshot(ctx context.Context, c sbx.Caller, ref string, req SnapshotRequest) (sbx.Snapshot, error) {
	var p sbx.Problems
	CheckMetadata(&p, "metadata", req.Metadata)
	if len(req.Name) > 128 {
		p.Add("name", "name is longer than 128 bytes")
	}
	if err := p.Err(); err != nil {
		return sbx.Snapshot{}, err
	}
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sbx.Snapshot{}, err
	}
	if _, err := m.snapshotter(sb.Provider, "snapshot sandboxes"); err != nil {
		return sbx.Snapshot{}, err
	}
	if err := m.checkFunded(ctx, sb.OrgID, "snapshot sandbox "+sb.ProviderSandboxID); err != nil {
		return sbx.Snapshot{}, err
	}
	return m.snapshot(ctx, sb.ID, req, sbx.PurposeUser, "")
}

// snapshotter is a provider that snapshots, or the 501 naming what it
// cannot do.
func (m *Manager) snapshotter(name, what string) (sbx.Snapshotter, error) {
	p, err := m.provider(name)
	if err != nil {
		return nil, err
	}
	s, ok := p.(sbx.Snapshotter)
	if !ok || !p.Capabilities().Snapshots {
		return nil, sbx.Errorf(sbx.EUnsupported, "provider %s cannot %s on this host", p.Name(), what)
	}
	return s, nil
}

// snapshot takes a snapshot of sandbox id for purpose, through the table's
// snapshot action: the source's intent is written, then, in the provider
// call, the snapshot's row (creating, with the token its agent holds now),
// then the provider captures it, and the row is settled ready or failed.
// A restart in between leaves a creating row that reconcile fails and
// whose files it removes.
func (m *Manager) snapshot(ctx context.Context, id string, req SnapshotRequest, purpose sbx.SnapshotPurpose, why string) (sbx.Snapshot, error) {
	var sn sbx.Snapshot
	var refused error // the call's own answer, when it is a caller's (a plan's limit, what the provider cannot snapshot)
	_, err := m.run(ctx, id, step{
		action: sbx.ActionSnapshot,
		why:    why,
		call: func(ctx context.Context, p sbx.Provider, sb sbx.Sandbox) (any, error) {
			now := m.clock.Now()
			sn = sbx.Snapshot{ID: uuid.NewString(), OrgID: sb.OrgID, WorkspaceID: sb.WorkspaceID, ProjectID: sb.ProjectID,
				SourceSandboxID: sb.ID, Provider: sb.Provider, TemplateID: sb.TemplateID, Name: req.Name, Metadata: req.Metadata,
				Memory: req.Memory, Purpose: purpose, State: sbx.SnapshotCreating, Resources: sb.Resources,
				EnvVarNames: sb.EnvVarNames, AccessToken: sb.AccessToken, CreatedAt: now, LastSettledAt: now}
			if err := m.store.InsertSnapshot(ctx, sn); err != nil {
				refused = err
				return nil, err
			}
			info, err := p.(sbx.Snapshotter).Snapshot(ctx, sb.Handle, sn.ID, req.Memory)
			sn, _ = m.settleSnapshot(ctx, sn.ID, info, err)
			if code := sbx.ErrorCode(err); code != "" && code != sbx.EProvider && code != sbx.EInternal {
				refused = err
			}
			return nil, err
		},
		settle: func(*sbx.Sandbox, sbx.Transition, any) {},
	})
	if refused != nil {
		return sn, refused
	}
	if err != nil {
		return sn, err
	}
	if sn.State != sbx.SnapshotReady {
		return sn, sbx.Errorf(sbx.EProvider, "snapshot %s was not recorded: %s", sn.ID, sn.Diagnostic)
	}
	return sn, nil
}

// settleSnapshot records a provider's capture of snapshot id: ready with
// what it holds, or failed with why.
func (m *Manager) settleSnapshot(ctx context.Context, id string, info sbx.SnapshotInfo, captured error) (sbx.Snapshot, error) {
	sn, err := m.store.UpdateSnapshot(ctx, id, m.clock.Now(), func(sn *sbx.Snapshot) error {
		if captured != nil {
			sn.State, sn.Diagnostic = sbx.SnapshotFailed, providerMessage(captured)
			return nil
		}
		sn.State, sn.Handle, sn.SizeBytes, sn.TemplateVersion, sn.Paused = sbx.SnapshotReady, info.Handle, info.SizeBytes, info.TemplateVersion, info.Paused
		sn.ReadyAt = m.clock.Now()
		return nil
	})
	if err != nil {
		m.log.Error("settling snapshot", "snapshot", id, "err", err)
	}
	return sn, err
}

// GetSnapshot reads a snapshot the caller's key reaches (a user's; a
// fork's own captures are not the caller's to see).
func (m *Manager) GetSnapshot(ctx context.Context, c sbx.Caller, id string) (sbx.Snapshot, error) {
	notFound := sbx.Errorf(sbx.ENotFound, "snapshot %s not found", id)
	if _, err := uuid.Parse(id); err != nil {
		return sbx.Snapshot{}, notFound
	}
	sn, err := m.store.GetSnapshot(ctx, c.Org.ID, id)
	if err != nil {
		return sn, err
	}
	if sn.Purpose != sbx.PurposeUser || sn.State == sbx.SnapshotDeleted {
		return sbx.Snapshot{}, notFound
	}
	if err := m.Sees(ctx, c, sbx.Sandbox{OrgID: sn.OrgID, WorkspaceID: sn.WorkspaceID, ProjectID: sn.ProjectID}, id); err != nil {
		return sbx.Snapshot{}, notFound
	}
	return sn, nil
}

// ListSnapshots lists the snapshots the caller's key reaches, a page at a
// time.
func (m *Manager) ListSnapshots(ctx context.Context, c sbx.Caller, f sbx.SnapshotFilter) ([]sbx.Snapshot, string, error) {
	f.OrgID = c.Org.ID
	if c.MemberScoped() {
		f.MemberID = c.User.ID
	}
	if !c.OrgWide() {
		f.ProjectID = c.Key.ProjectID
	}
	return m.store.ListSnapshots(ctx, f)
}

// DeleteSnapshot removes a snapshot's files and marks its row deleted;
// the sandboxes started from it go on.
func (m *Manager) DeleteSnapshot(ctx context.Context, c sbx.Caller, id string) (sbx.Snapshot, error) {
	sn, err := m.GetSnapshot(ctx, c, id)
	if err != nil {
		return sn, err
	}
	return m.deleteSnapshot(ctx, sn)
}

// deleteSnapshot removes sn's files, then records it deleted: a restart
// between the two finds a ready row whose files are gone, and fails it.
func (m *Manager) deleteSnapshot(ctx context.Context, sn sbx.Snapshot) (sbx.Snapshot, error) {
	if sn.State == sbx.SnapshotCreating {
		return sn, sbx.Errorf(sbx.EConflict, "snapshot %s is still being taken", sn.ID)
	}
	if sn.State == sbx.SnapshotReady {
		s, err := m.snapshotter(sn.Provider, "delete snapshots")
		if err != nil {
			return sn, err
		}
		if err := s.DeleteSnapshot(context.WithoutCancel(ctx), sn.ID); err != nil {
			return sn, sbx.Errorf(sbx.EProvider, "could not delete snapshot %s: %s", sn.ID, providerMessage(err))
		}
	}
	return m.store.UpdateSnapshot(context.WithoutCancel(ctx), sn.ID, m.clock.Now(), func(s *sbx.Snapshot) error {
		s.State, s.DeletedAt = sbx.SnapshotDeleted, m.clock.Now()
		return nil
	})
}

// fromSnapshot makes req a create from the snapshot it names, if any: the
// snapshot's template and sizes (a restore has its source's memory), the
// caller's own env, timeout and metadata. It answers the snapshot.
func (m *Manager) fromSnapshot(ctx context.Context, c sbx.Caller, req *CreateRequest) (*sbx.Snapshot, error) {
	if req.SnapshotID == "" {
		return nil, nil
	}
	var sn sbx.Snapshot
	if req.snapshot != nil { // a fork's own capture, which no caller names
		sn = *req.snapshot
	} else {
		var err error
		if sn, err = m.GetSnapshot(ctx, c, req.SnapshotID); err != nil {
			return nil, err
		}
	}
	if sn.State != sbx.SnapshotReady {
		return nil, sbx.Errorf(sbx.EConflict, "snapshot %s is %s: only a ready snapshot starts sandboxes", sn.ID, sn.State)
	}
	req.TemplateID, req.Resources = sn.TemplateID, sn.Resources // Request refused others
	return &sn, nil
}

// adopt gives the agent of a sandbox restored from snapshot sn its own
// token and env in place of its source's.
func (m *Manager) adopt(ctx context.Context, p sbx.Provider, inst sbx.Instance, sn *sbx.Snapshot, spec sbx.Spec, fork bool) error {
	d, ok := p.(sbx.AgentDialer)
	if !ok || !sn.Memory {
		return nil
	}
	addr, err := d.AgentAddr(ctx, inst.Handle)
	if err != nil {
		return err
	}
	env, unset := spec.Env, sn.EnvVarNames
	if fork { // a fork keeps its parent's env, which it holds
		env, unset = nil, nil
	}
	return agentcall.Adopt(ctx, addr, sn.AccessToken, spec.AccessToken, env, unset)
}

// ForkResult is what a fork made: its children, running, and the errors of
// those it could not make (each child either runs or was removed).
type ForkResult struct {
	Children []sbx.Sandbox
	Errors   []string
}

// Fork makes count running children of a running sandbox, each a sandbox
// of its own with the parent's memory, processes and files: the parent is
// captured once (a snapshot of the fork's own) and each child restored
// from it, all at once; the capture is deleted when they run.
func (m *Manager) Fork(ctx context.Context, c sbx.Caller, ref string, count int) (ForkResult, error) {
	if count < 1 || count > m.cfg.MaxForks {
		return ForkResult{}, sbx.Invalid("count", "count must be between 1 and %d", m.cfg.MaxForks)
	}
	parent, err := m.Get(ctx, c, ref)
	if err != nil {
		return ForkResult{}, err
	}
	if _, err := m.snapshotter(parent.Provider, "fork sandboxes"); err != nil {
		return ForkResult{}, err
	}
	if parent.State != sbx.StateRunning {
		return ForkResult{}, sbx.Errorf(sbx.EConflict, "cannot fork sandbox %s: it is %s; resume it first", parent.ProviderSandboxID, parent.State)
	}
	vols, err := m.store.SandboxVolumes(ctx, parent.ID)
	if err != nil {
		return ForkResult{}, err
	}
	for _, v := range vols {
		if !v.ReadOnly { // its children would mount it too
			return ForkResult{}, sbx.Errorf(sbx.EConflict, "cannot fork sandbox %s: it has volume %s mounted read-write, which one sandbox at a time does; fork one that mounts it readOnly", parent.ProviderSandboxID, v.Name)
		}
	}
	if err := m.checkFunded(ctx, parent.OrgID, "fork sandbox "+parent.ProviderSandboxID); err != nil {
		return ForkResult{}, err
	}
	sn, err := m.snapshot(ctx, parent.ID, SnapshotRequest{Memory: true}, sbx.PurposeFork, fmt.Sprintf("fork into %d", count))
	if err != nil {
		return ForkResult{}, err
	}
	defer m.deleteSnapshot(context.WithoutCancel(ctx), sn)
	owner := sbx.Caller{Org: c.Org, Workspace: sbx.Workspace{ID: parent.WorkspaceID}, Project: sbx.Project{ID: parent.ProjectID}, Key: c.Key, User: c.User}
	meta := maps.Clone(parent.Metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	meta[ForkOfKey] = parent.ID
	var (
		mu  sync.Mutex
		res ForkResult
		wg  sync.WaitGroup
	)
	for i := range count {
		wg.Go(func() {
			child, err := m.Create(context.WithoutCancel(ctx), owner, CreateRequest{
				SnapshotID: sn.ID, snapshot: &sn, forkOf: parent.ID, Kind: parent.Kind, Timeout: parent.Timeout, WaitReady: true,
				AutoPause: parent.AutoPause, Preview: parent.Preview, Ports: parent.Ports, Metadata: meta, Egress: parent.Egress,
				envNames: parent.EnvVarNames,
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if child.ID != "" {
					m.Kill(context.WithoutCancel(ctx), owner, child.ID) // no child is left half-made
				}
				res.Errors = append(res.Errors, fmt.Sprintf("child %d: %s", i+1, providerMessage(err)))
				return
			}
			res.Children = append(res.Children, child)
		})
	}
	wg.Wait()
	ids := make([]string, len(res.Children))
	for i, ch := range res.Children {
		ids[i] = ch.ID
	}
	m.store.AddEvents(context.WithoutCancel(ctx), parent.ID, m.event("forked", fmt.Sprintf("%d of %d children: %v", len(ids), count, ids)))
	if len(res.Children) == 0 {
		return res, sbx.Errorf(sbx.EProvider, "no child of sandbox %s could be made: %s", parent.ProviderSandboxID, res.Errors[0])
	}
	return res, nil
}

// ForkOfKey is the metadata key that names a fork's parent.
const ForkOfKey = "sbx.forkOf"

func errorMessage(err error) string {
	var e *sbx.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// reconcileSnapshots finishes what a restart interrupted of a provider's
// snapshots: one being taken (creating) or a fork's capture is removed and
// its row settled failed or deleted; a ready one whose files are gone is
// failed; files no open row owns are removed.
func (m *Manager) reconcileSnapshots(ctx context.Context, p sbx.Provider) error {
	s, ok := p.(sbx.Snapshotter)
	if !ok {
		return nil
	}
	ids, err := s.Snapshots(ctx)
	if err != nil {
		return err
	}
	held := map[string]bool{}
	for _, id := range ids {
		held[id] = true
	}
	rows, err := m.store.OpenSnapshots(ctx, p.Name())
	if err != nil {
		return err
	}
	for _, sn := range rows {
		owned := held[sn.ID]
		delete(held, sn.ID)
		var state sbx.SnapshotState
		var why string
		switch {
		case sn.State == sbx.SnapshotCreating:
			state, why = sbx.SnapshotFailed, "interrupted by a restart of sbx while it was being taken"
		case sn.Purpose == sbx.PurposeFork:
			state = sbx.SnapshotDeleted
		case !owned:
			state, why = sbx.SnapshotFailed, fmt.Sprintf("provider %s no longer has this snapshot", p.Name())
		default:
			continue
		}
		if owned {
			if err := s.DeleteSnapshot(ctx, sn.ID); err != nil {
				return fmt.Errorf("removing snapshot %s: %w", sn.ID, err)
			}
		}
		_, err := m.store.UpdateSnapshot(ctx, sn.ID, m.clock.Now(), func(s *sbx.Snapshot) error {
			s.State, s.Diagnostic = state, why
			if state == sbx.SnapshotDeleted {
				s.DeletedAt = m.clock.Now()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for id := range held {
		m.log.Warn("reconcile: removing a snapshot the ledger does not own", "provider", p.Name(), "snapshot", id)
		if err := s.DeleteSnapshot(ctx, id); err != nil {
			return fmt.Errorf("removing orphan snapshot %s: %w", id, err)
		}
	}
	return nil
}
