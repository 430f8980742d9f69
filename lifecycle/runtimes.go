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

// Runtimes drives a project's runtimes over the sandbox core (Manager):
// their reads, their configuration, and the start, pause, resume,
// keepalive and reset of their current sandbox, whose capabilities a start
// materializes (capabilities.go). It reads and writes the ledger through its
// own RuntimeStore; the sandbox itself changes only through the core.
type Runtimes struct {
	m     *Manager
	store RuntimeStore
}

// NewRuntimes returns the runtimes over the core m and their store.
func NewRuntimes(m *Manager, store RuntimeStore) *Runtimes { return &Runtimes{m: m, store: store} }

// RuntimeStart is what a runtime's start gets beyond its configuration.
type RuntimeStart struct {
	Resources sbx.Resources // the configuration's; the defaults fill what it leaves zero (StartResources)
	SecretIDs []string      // secrets (the org's, or the caller's member's own) for the sandbox's env; they win over the configuration's
	Timeout   time.Duration // requested_runtime_limit_seconds; 0: the configuration's
	Once      *ledger.Once  // the client's idempotency key: a retry answers the runtime the first start made running
}

// Start provisions a sandbox for an idle runtime, waits until it is
// ready and materializes the runtime's enabled capabilities in it. Its env
// is the capabilities' env, then the runtime's, then the chosen secrets,
// each winning over the one before. The caller acts in the runtime's
// workspace and project. A caller who stops waiting does not stop the
// start: the sandbox is made and materialized all the same. The runtime's
// lock covers the create only, so a pause or reset need not wait for long
// installs; a materialization that cannot reach the agent is told in the
// timeline (capabilities_failed), and the start still answers the running
// runtime.
func (r *Runtimes) Start(ctx context.Context, c sbx.Caller, rt sbx.Runtime, start RuntimeStart) (sbx.Runtime, error) {
	ctx = context.WithoutCancel(ctx)
	secrets, err := r.store.SecretEnv(ctx, c.Org.ID, c.User.ID, start.SecretIDs)
	if err != nil {
		return rt, err
	}
	set, err := capability.ResolveRuntime(ctx, r.store, rt.OrgID, rt.ID)
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
	unlock, err := r.lockRuntime(ctx, rt)
	if err != nil {
		return rt, err
	}
	sb, replayed, err := r.m.CreateOnce(ctx, c, CreateRequest{
		TemplateID: rt.Config.TemplateID, Kind: sbx.KindRuntime, Timeout: timeout, WaitReady: true, Ports: rt.Config.Ports,
		Env: env, Metadata: labels, Resources: r.m.StartResources(start.Resources), Egress: rt.Config.Egress, RuntimeID: rt.ID, Once: start.Once,
	})
	unlock()
	if replayed && err == nil {
		return r.store.GetRuntime(ctx, rt.OrgID, rt.WorkspaceID, rt.ID)
	}
	if err != nil && sb.ID != "" && sbx.ErrorCode(err) == sbx.ETimeout {
		r.abandon(sb.ID)
		return rt, sbx.Errorf(sbx.ETimeout, "%s; the start gave it up and is killing it, so the runtime will be idle again", sbx.ErrorMessage(err))
	}
	if err != nil {
		return rt, err
	}
	if len(set.Capabilities) > 0 {
		if err := r.materialize(ctx, sb, set); err != nil {
			r.m.log.Warn("materializing capabilities", "sandbox", sb.ID, "runtime", rt.ID, "err", err)
			if err := r.store.AddEvents(ctx, sb.ID, r.m.event("capabilities_failed", err.Error())); err != nil {
				return rt, err
			}
		}
	}
	return r.store.GetRuntime(ctx, rt.OrgID, rt.WorkspaceID, rt.ID)
}

// Configure checks a change of runtime rt's configuration (each
// problem under the API's name for its field) and records it; a sandbox
// already running keeps what it was made with.
func (r *Runtimes) Configure(ctx context.Context, rt sbx.Runtime, ch RuntimeChange) (sbx.Runtime, error) {
	var p sbx.Problems
	c, l, maxTimeout := rt.Config, r.m.cfg.Limits, int64(r.m.cfg.MaxTimeout/time.Second)
	if v := ch.TemplateID; v != nil {
		CheckTemplate(&p, "template_id", *v)
		c.TemplateID = *v
	}
	if v := ch.CPU; v != nil {
		c.Resources.MilliCPU = l.MilliCPU(&p, "cpu", *v)
	}
	if v := ch.MemoryMB; v != nil {
		c.Resources.MemoryMB = l.Memory(&p, "memory_mb", *v)
	}
	if v := ch.Timeout; v != nil {
		if *v < 1 || *v > maxTimeout {
			p.Add("timeout", "timeout must be between 1 and %d seconds", maxTimeout)
		}
		c.Timeout = time.Duration(*v) * time.Second
	}
	if v := ch.Ports; v != nil {
		sbx.CheckPorts(&p, "ports", *v)
		c.Ports = *v
	}
	if v := ch.Env; v != nil {
		CheckEnv(&p, "env", *v)
		c.Env = *v
	}
	if v := ch.Labels; v != nil {
		CheckMetadata(&p, "labels", *v)
		c.Labels = *v
	}
	if v := ch.Egress; v != nil {
		e := sbx.CheckEgress(&p, "egress", *v)
		c.Egress = &e
	}
	if err := p.Err(); err != nil {
		return rt, err
	}
	if ch.Egress != nil {
		if err := r.m.checkEgressMode(*c.Egress, "the runtime's configuration"); err != nil {
			return rt, err
		}
	}
	return r.store.SetRuntimeConfig(ctx, rt.OrgID, rt.WorkspaceID, rt.ID, c, r.m.clock.Now())
}

// abandon kills, in the background, a runtime's sandbox that was not ready
// in time: a failed start leaves neither compute nor a runtime stuck with a
// sandbox its capabilities never reached. The kill waits for a create still
// under way.
func (r *Runtimes) abandon(id string) {
	r.m.wg.Add(1)
	go func() {
		defer r.m.wg.Done()
		if _, err := r.m.kill(context.Background(), id, sbx.EndError); err != nil {
			r.m.log.Warn("killing a runtime's sandbox that was not ready", "sandbox", id, "err", err)
		}
	}()
}

// Pause pauses the runtime's sandbox.
func (r *Runtimes) Pause(ctx context.Context, c sbx.Caller, rt sbx.Runtime) (sbx.Runtime, error) {
	return r.onRuntime(ctx, rt, "pause", func(id string) error {
		_, err := r.m.Pause(ctx, c, id, sbx.PauseUser)
		return err
	})
}

// Resume resumes the runtime's paused sandbox.
func (r *Runtimes) Resume(ctx context.Context, c sbx.Caller, rt sbx.Runtime) (sbx.Runtime, error) {
	return r.onRuntime(ctx, rt, "resume", func(id string) error {
		_, err := r.m.Resume(ctx, c, id, 0)
		return err
	})
}

// Keepalive keeps the runtime's running sandbox alive for at least d
// more; it never shortens its life. d 0 is the runtime's timeout, or the
// server's default cut to the plan's longest.
func (r *Runtimes) Keepalive(ctx context.Context, c sbx.Caller, rt sbx.Runtime, d time.Duration) (sbx.Runtime, error) {
	if d == 0 {
		d = cmp.Or(rt.Config.Timeout, r.m.defaultTimeout(c))
	}
	return r.onRuntime(ctx, rt, "keep alive", func(id string) error {
		_, err := r.m.Refresh(ctx, c, id, d)
		return err
	})
}

// Reset kills the runtime's sandbox, which stays in the ledger,
// killed, and leaves the runtime idle.
func (r *Runtimes) Reset(ctx context.Context, c sbx.Caller, rt sbx.Runtime) (sbx.Runtime, error) {
	return r.onRuntime(ctx, rt, "reset", func(id string) error {
		_, err := r.m.Kill(ctx, c, id)
		return err
	})
}

// onRuntime runs fn on the runtime's current sandbox, under the runtime's
// lock, and answers the runtime as it then is.
func (r *Runtimes) onRuntime(ctx context.Context, rt sbx.Runtime, verb string, fn func(sandboxID string) error) (sbx.Runtime, error) {
	unlock, err := r.lockRuntime(ctx, rt)
	if err != nil {
		return rt, err
	}
	defer unlock()
	if rt, err = r.store.GetRuntime(ctx, rt.OrgID, rt.WorkspaceID, rt.ID); err != nil {
		return rt, err
	}
	if rt.SandboxID == "" {
		return rt, sbx.Errorf(sbx.EConflict, "cannot %s runtime %s: it has no sandbox (it is idle); start it first", verb, rt.ID)
	}
	if err := fn(rt.SandboxID); err != nil {
		return rt, err
	}
	return r.store.GetRuntime(ctx, rt.OrgID, rt.WorkspaceID, rt.ID)
}

// lockRuntime takes the runtime's lock: one start or action at a time per
// runtime on this serve (the ledger keeps serves from giving it two sandboxes).
func (r *Runtimes) lockRuntime(ctx context.Context, rt sbx.Runtime) (func(), error) {
	key := "runtime/" + rt.ID
	if err := r.m.locks.Lock(ctx, key); err != nil {
		return nil, sbx.Errorf(sbx.ETimeout, "runtime %s is busy with another operation", rt.ID)
	}
	return func() { r.m.locks.Unlock(key) }, nil
}

// List lists a page of workspace ws's runtimes that c reaches (a
// project's key: its project's).
func (r *Runtimes) List(ctx context.Context, c sbx.Caller, ws sbx.Workspace, p sbx.Page) ([]sbx.Runtime, string, error) {
	return r.store.Runtimes(ctx, ws.OrgID, ws.ID, c.Key.ProjectID, p)
}

// Get finds runtime id of workspace ws for c (authz.ReachRuntime: a
// project's key reaches only its project's).
func (r *Runtimes) Get(ctx context.Context, c sbx.Caller, ws sbx.Workspace, id string) (sbx.Runtime, error) {
	rt, err := r.store.GetRuntime(ctx, ws.OrgID, ws.ID, id)
	if err == nil {
		err = authz.ReachRuntime(c, rt)
	}
	return rt, err
}

// Sandbox is runtime rt's current sandbox, with its timeline (where
// its capabilities' materialization is told).
func (r *Runtimes) Sandbox(ctx context.Context, rt sbx.Runtime) (sbx.Sandbox, []sbx.Event, error) {
	sb, err := r.store.GetSandbox(ctx, rt.OrgID, rt.SandboxID)
	if err != nil {
		return sb, nil, err
	}
	timeline, err := r.store.Events(ctx, sb.ID)
	return sb, timeline, err
}
