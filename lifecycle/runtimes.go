package lifecycle

import (
	"cmp"
	"context"
	"maps"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/capability"
	"github.com/sbxdev/sbx/ledger"
)

// Runtimes: a project's durable record, whose current sandbox (kind
// runtime) comes and goes. Start makes one from the runtime's configuration;
// pause, resume, keepalive and reset act on it, and each is a conflict that
// says so when the runtime has none. Reset kills it (its row stays) and
// leaves the runtime idle; so does the sandbox ending any other way.

// runtimeLabel is the metadata key that names, on each of a runtime's
// sandboxes, the runtime it was started for. Labels may not use the sbx.
// prefix.
const runtimeLabel = "sbx.runtime_id"

// RuntimeStart is what a runtime's start gets beyond its configuration.
type RuntimeStart struct {
	Resources sbx.Resources // the configuration's; the defaults fill what it leaves zero (StartResources)
	SecretIDs []string      // secrets (the org's, or the caller's member's own) for the sandbox's env; they win over the configuration's
	Timeout   time.Duration // requested_runtime_limit_seconds; 0: the configuration's
	Once      *ledger.Once  // the client's idempotency key: a retry answers the runtime the first start made running
}

// StartRuntime provisions a sandbox for an idle runtime, waits until it is
// ready and materializes the runtime's enabled capabilities in it. Its env
// is the capabilities' env, then the runtime's, then the chosen secrets,
// each winning over the one before. The caller acts in the runtime's
// workspace and project. A caller who stops waiting does not stop the
// start: the sandbox is made and materialized all the same. The runtime's
// lock covers the create only, so a pause or reset need not wait for long
// installs; a materialization that cannot reach the agent is told in the
// timeline (capabilities_failed), and the start still answers the running
// runtime.
func (m *Manager) StartRuntime(ctx context.Context, c sbx.Caller, rt sbx.Runtime, start RuntimeStart) (sbx.Runtime, error) {
	ctx = context.WithoutCancel(ctx)
	secrets, err := m.store.SecretEnv(ctx, c.Org.ID, c.User.ID, start.SecretIDs)
	if err != nil {
		return rt, err
	}
	set, err := capability.ResolveRuntime(ctx, m.store, rt.OrgID, rt.ID)
	if err != nil {
		return rt, err
	}
	env := map[string]string{}
	for _, layer := range []map[string]string{set.Env, rt.Config.Env, secrets} {
		maps.Copy(env, layer)
	}
	labels := maps.Clone(rt.Config.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[runtimeLabel] = rt.ID
	timeout := start.Timeout
	if timeout == 0 {
		timeout = rt.Config.Timeout
	}
	c.Workspace, c.Project = sbx.Workspace{ID: rt.WorkspaceID, OrgID: rt.OrgID}, sbx.Project{ID: rt.ProjectID, OrgID: rt.OrgID, WorkspaceID: rt.WorkspaceID}
	unlock, err := m.lockRuntime(ctx, rt)
	if err != nil {
		return rt, err
	}
	sb, replayed, err := m.CreateOnce(ctx, c, CreateRequest{
		TemplateID: rt.Config.TemplateID, Kind: sbx.KindRuntime, Timeout: timeout, WaitReady: true,
		Env: env, Metadata: labels, Resources: m.StartResources(start.Resources), RuntimeID: rt.ID, Once: start.Once,
	})
	unlock()
	if replayed && err == nil {
		return m.store.GetRuntime(ctx, rt.OrgID, rt.WorkspaceID, rt.ID)
	}
	if err != nil && sb.ID != "" && sbx.ErrorCode(err) == sbx.ETimeout {
		m.abandon(sb.ID)
		return rt, sbx.Errorf(sbx.ETimeout, "%s; the start gave it up and is killing it, so the runtime will be idle again", sbx.ErrorMessage(err))
	}
	if err != nil {
		return rt, err
	}
	if len(set.Capabilities) > 0 {
		if err := m.materialize(ctx, sb, set); err != nil {
			m.log.Warn("materializing capabilities", "sandbox", sb.ID, "runtime", rt.ID, "err", err)
			if err := m.store.AddEvents(ctx, sb.ID, m.event("capabilities_failed", err.Error())); err != nil {
				return rt, err
			}
		}
	}
	return m.store.GetRuntime(ctx, rt.OrgID, rt.WorkspaceID, rt.ID)
}

// abandon kills, in the background, a runtime's sandbox that was not ready
// in time: a failed start leaves neither compute nor a runtime stuck with a
// sandbox its capabilities never reached. The kill waits for a create still
// under way.
func (m *Manager) abandon(id string) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if _, err := m.kill(context.Background(), id, sbx.EndError); err != nil {
			m.log.Warn("killing a runtime's sandbox that was not ready", "sandbox", id, "err", err)
		}
	}()
}

// PauseRuntime pauses the runtime's sandbox.
func (m *Manager) PauseRuntime(ctx context.Context, c sbx.Caller, rt sbx.Runtime) (sbx.Runtime, error) {
	return m.onRuntime(ctx, rt, "pause", func(id string) error {
		_, err := m.Pause(ctx, c, id, sbx.PauseUser)
		return err
	})
}

// ResumeRuntime resumes the runtime's paused sandbox.
func (m *Manager) ResumeRuntime(ctx context.Context, c sbx.Caller, rt sbx.Runtime) (sbx.Runtime, error) {
	return m.onRuntime(ctx, rt, "resume", func(id string) error {
		_, err := m.Resume(ctx, c, id, 0)
		return err
	})
}

// KeepaliveRuntime keeps the runtime's running sandbox alive for at least d
// more; it never shortens its life. d 0 is the runtime's timeout, or the
// server's default cut to the plan's longest.
func (m *Manager) KeepaliveRuntime(ctx context.Context, c sbx.Caller, rt sbx.Runtime, d time.Duration) (sbx.Runtime, error) {
	if d == 0 {
		d = cmp.Or(rt.Config.Timeout, m.defaultTimeout(c))
	}
	return m.onRuntime(ctx, rt, "keep alive", func(id string) error {
		_, err := m.Refresh(ctx, c, id, d)
		return err
	})
}

// ResetRuntime kills the runtime's sandbox, which stays in the ledger,
// killed, and leaves the runtime idle.
func (m *Manager) ResetRuntime(ctx context.Context, c sbx.Caller, rt sbx.Runtime) (sbx.Runtime, error) {
	return m.onRuntime(ctx, rt, "reset", func(id string) error {
		_, err := m.Kill(ctx, c, id)
		return err
	})
}

// onRuntime runs fn on the runtime's current sandbox, under the runtime's
// lock, and answers the runtime as it then is.
func (m *Manager) onRuntime(ctx context.Context, rt sbx.Runtime, verb string, fn func(sandboxID string) error) (sbx.Runtime, error) {
	unlock, err := m.lockRuntime(ctx, rt)
	if err != nil {
		return rt, err
	}
	defer unlock()
	if rt, err = m.store.GetRuntime(ctx, rt.OrgID, rt.WorkspaceID, rt.ID); err != nil {
		return rt, err
	}
	if rt.SandboxID == "" {
		return rt, sbx.Errorf(sbx.EConflict, "cannot %s runtime %s: it has no sandbox (it is idle); start it first", verb, rt.ID)
	}
	if err := fn(rt.SandboxID); err != nil {
		return rt, err
	}
	return m.store.GetRuntime(ctx, rt.OrgID, rt.WorkspaceID, rt.ID)
}

// lockRuntime takes the runtime's lock: one start or action at a time per
// runtime on this serve (the ledger keeps serves from giving it two sandboxes).
func (m *Manager) lockRuntime(ctx context.Context, rt sbx.Runtime) (func(), error) {
	key := "runtime/" + rt.ID
	if err := m.locks.Lock(ctx, key); err != nil {
		return nil, sbx.Errorf(sbx.ETimeout, "runtime %s is busy with another operation", rt.ID)
	}
	return func() { m.locks.Unlock(key) }, nil
}

// Runtimes lists a page of workspace ws's runtimes that c reaches (a
// project's key: its project's).
func (m *Manager) Runtimes(ctx context.Context, c sbx.Caller, ws sbx.Workspace, p sbx.Page) ([]sbx.Runtime, string, error) {
	return m.store.Runtimes(ctx, ws.OrgID, ws.ID, c.Key.ProjectID, p)
}

// Runtime finds runtime id of workspace ws for c (authz.ReachRuntime: a
// project's key reaches only its project's).
func (m *Manager) Runtime(ctx context.Context, c sbx.Caller, ws sbx.Workspace, id string) (sbx.Runtime, error) {
	rt, err := m.store.GetRuntime(ctx, ws.OrgID, ws.ID, id)
	if err == nil {
		err = authz.ReachRuntime(c, rt)
	}
	return rt, err
}

// RuntimeSandbox is runtime rt's current sandbox, with its timeline (where
// its capabilities' materialization is told).
func (m *Manager) RuntimeSandbox(ctx context.Context, rt sbx.Runtime) (sbx.Sandbox, []sbx.Event, error) {
	sb, err := m.store.GetSandbox(ctx, rt.OrgID, rt.SandboxID)
	if err != nil {
		return sb, nil, err
	}
	timeline, err := m.store.Events(ctx, sb.ID)
	return sb, timeline, err
}
