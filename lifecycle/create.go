package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/telemetry"
	"go.opentelemetry.io/otel/attribute"
)

// CreateRequest is a validated request for a new sandbox.
type CreateRequest struct {
	TemplateID string
	Image      *sbx.ImageSpec // in place of TemplateID, which the create sets to its pinned reference
	Kind       sbx.Kind
	Timeout    time.Duration // 0: the default
	WaitReady  bool
	AutoPause  bool
	Preview    sbx.Preview
	Ports      []int // the ports it serves, listed with their preview URLs
	Env        map[string]string
	Metadata   map[string]string
	Resources  sbx.Resources
	Egress     *sbx.Egress // checked (sbx.CheckEgress); nil: the template's default, else the server's (egress.go)
	RuntimeID  string      // when set, the sandbox becomes this runtime's current one (runtimes.go)
	Provider   string      // the provider it runs on; "": the server's default
	// Once, when set, is the idempotency key the client sent: a retry
	// finds the sandbox the first request made (CreateOnce).
	Once *ledger.Once
	// SnapshotID, in place of TemplateID, is a snapshot to start from
	// (snapshots.go): restored with its memory, or booted on its files.
	SnapshotID string
	// Volumes are mounted at their paths (volumes.go); a sandbox from a
	// snapshot mounts its source's instead.
	Volumes []VolumeAsk

	// PoolMode is how the create uses its template's warm pool (pools.go);
	// "" is prefer.
	PoolMode sbx.PoolMode

	snapshot *sbx.Snapshot // a fork's capture, which the fork names itself
	pool     string        // the template whose warm pool the new sandbox is a member of
	cold     bool          // boot, even when the template has a ready snapshot (ready.go)
	// templateVersion is the version of the template a tag named (""
	// when it is the current one): such a create boots that version.
	templateVersion string
	forkOf          string   // the sandbox a fork's child is forked from
	envNames        []string // a fork's child's env, its parent's, which it holds
}

// CreateOnce is Create for a request that may carry an idempotency key: a
// request whose key made a sandbox within ledger.OnceTTL gets that sandbox
// (replayed: true; waited for with WaitReady, as the first was) instead of
// another, and a request reusing a key for something else is refused. A
// retry racing the first request finds the first's sandbox too.
func (m *Manager) CreateOnce(ctx context.Context, c sbx.Caller, req CreateRequest) (sb sbx.Sandbox, replayed bool, err error) {
	if req.Once == nil {
		sb, err = m.Create(ctx, c, req)
		return sb, false, err
	}
	for try := 0; ; try++ {
		if sb, replayed, err = m.replay(ctx, c, req); replayed || err != nil {
			return sb, replayed, err
		}
		sb, err = m.Create(ctx, c, req)
		if !errors.Is(err, ledger.ErrOnceTaken) || try > 0 {
			return sb, false, err
		}
	}
}

// replay finds the sandbox req's idempotency key made, if any.
func (m *Manager) replay(ctx context.Context, c sbx.Caller, req CreateRequest) (sbx.Sandbox, bool, error) {
	id, hash, err := m.store.FindOnce(ctx, *req.Once, m.clock.Now())
	if err != nil || id == "" {
		return sbx.Sandbox{}, false, err
	}
	if hash != req.Once.Hash {
		return sbx.Sandbox{}, false, sbx.Errorf(sbx.EKeyReused, "Idempotency-Key %q was used within the last %s for another request; send a new key for a new request", req.Once.Key, ledger.OnceTTL)
	}
	// Only what the caller may still see: a member taken out of the
	// sandbox's workspace since does not get it (and its access token) back.
	sb, err := m.Get(ctx, c, id)
	if sbx.ErrorCode(err) == sbx.ENotFound {
		err = sbx.Errorf(sbx.EKeyReused, "Idempotency-Key %q made a sandbox within the last %s that this key no longer reaches; send a new key for a new request", req.Once.Key, ledger.OnceTTL)
	}
	if err != nil {
		return sbx.Sandbox{}, false, err
	}
	if !req.WaitReady || sb.State != sbx.StateStarting {
		return sb, true, nil
	}
	m.mu.Lock()
	done := m.creating[sb.ID]
	m.mu.Unlock()
	if done == nil {
		return sb, true, nil // settled between the read and now, or by another serve
	}
	sb, err = m.waitReady(ctx, sb, done)
	return sb, true, err
}

// createProvider picks a create's provider: the one it names, else the
// server's default, else, from a snapshot, the snapshot's. A name this
// server has no provider of is a 400 listing those it has; one configured
// but down is a 503.
func (m *Manager) createProvider(req *CreateRequest, sn *sbx.Snapshot) (sbx.Provider, error) {
	if req.Provider == "" {
		req.Provider = m.cfg.DefaultProvider
		if sn != nil {
			req.Provider = sn.Provider
		}
	}
	_, configured := m.providers[req.Provider]
	if _, down := m.missing[req.Provider]; !configured && !down {
		return nil, sbx.Invalid("provider", "provider %q is not one of this server's: %s", req.Provider, strings.Join(m.providerNames(), ", "))
	}
	if sn != nil && sn.Provider != req.Provider {
		return nil, sbx.Invalid("provider", "snapshot %s is on provider %s, not %s", sn.ID, sn.Provider, req.Provider)
	}
	return m.provider(req.Provider)
}

// Create records a new sandbox and starts its compute. Without WaitReady it
// returns at once with the sandbox starting; with it, once the sandbox is
// running, failed, or the ready wait ran out (a 504 naming the last step).
func (m *Manager) Create(ctx context.Context, c sbx.Caller, req CreateRequest) (_ sbx.Sandbox, err error) {
	ctx, span := telemetry.Span(ctx, "lifecycle.create")
	defer func() { telemetry.End(span, err) }()
	sn, err := m.fromSnapshot(ctx, c, &req)
	if err != nil {
		return sbx.Sandbox{}, err
	}
	if err := m.admit(c, &req); err != nil {
		return sbx.Sandbox{}, err
	}
	if err := m.checkTimeout("timeout", req.Timeout); err != nil {
		return sbx.Sandbox{}, err
	}
	if req.Kind == "" {
		req.Kind = sbx.KindTask
	}
	size := 0 // the API checked each env it was given; a runtime's start merges several
	for k, v := range req.Env {
		if problem := sbx.EnvProblem(k, v); problem != "" {
			return sbx.Sandbox{}, sbx.Invalid("envVars."+k, "%s", problem)
		}
		size += len(k) + len(v) + 2
	}
	if size > sbx.MaxEnvBytes {
		return sbx.Sandbox{}, sbx.Invalid("envVars", "the sandbox's environment would be %d bytes, more than %d: commands could not start in it; give fewer or shorter variables", size, sbx.MaxEnvBytes)
	}
	if err := m.checkFunded(ctx, c.Org.ID, "create a sandbox"); err != nil {
		return sbx.Sandbox{}, err
	}
	p, err := m.createProvider(&req, sn)
	if err != nil {
		return sbx.Sandbox{}, err
	}
	admit, admits := p.(sbx.Admitter)
	if req.Resources.GPU != nil && !admits && !p.Capabilities().GPU {
		return sbx.Sandbox{}, sbx.Errorf(sbx.EUnsupported, "provider %q does not offer GPUs", p.Name())
	}
	var defaults sbx.TemplateDefaults
	if sn != nil {
		if _, err := m.snapshotter(p.Name(), "start sandboxes from snapshots"); err != nil {
			return sbx.Sandbox{}, err
		}
	} else if req.Image != nil {
		if req.Image, err = resolveImage(ctx, p, *req.Image); err != nil {
			return sbx.Sandbox{}, err
		}
		req.TemplateID = req.Image.Ref
	} else if t, ok := p.(sbx.TemplateDefaulter); ok {
		var known *sbx.TemplateDefaults
		if req.TemplateID, req.templateVersion, known, err = m.resolveTemplate(ctx, c, t, req.TemplateID); err != nil {
			return sbx.Sandbox{}, err
		}
		if known != nil {
			defaults = *known
		} else if defaults, err = t.TemplateDefaults(ctx, req.TemplateID, req.templateVersion); err != nil {
			return sbx.Sandbox{}, err
		}
		if err := m.pinned(ctx, t, &req); err != nil {
			return sbx.Sandbox{}, err
		}
	}
	egress, err := m.createEgress(p, req, defaults)
	if err != nil {
		return sbx.Sandbox{}, err
	}
	if req.Ports == nil {
		req.Ports = defaults.Ports
	}
	warm, coldWhy, err := m.fromPool(ctx, c, p, req, egress)
	if err != nil || warm.ID != "" {
		return warm, err
	}
	ready := false
	if sn == nil {
		if sn, err = m.readySnapshot(ctx, req, defaults); err != nil {
			return sbx.Sandbox{}, err
		}
		ready = sn != nil
	}
	now := m.clock.Now()
	names := sortedKeys(req.Env)
	sb := sbx.Sandbox{
		ID: uuid.NewString(), OrgID: c.Org.ID, WorkspaceID: c.Workspace.ID, ProjectID: c.Project.ID,
		Provider: p.Name(), ProviderSandboxID: newProviderID(), Kind: req.Kind, TemplateID: req.TemplateID,
		State: creation.From, Intent: creation.Intent, OpOwner: m.owner, CreatedAt: now, UpdatedAt: now,
		Timeout: req.Timeout, AutoPause: req.AutoPause, Preview: req.Preview, Ports: req.Ports, Resources: req.Resources,
		EnvVarNames: names, Metadata: req.Metadata, AccessToken: newToken(), LastSettledAt: now, Egress: egress,
		SnapshotID: req.SnapshotID, ForkedFrom: req.forkOf, Pool: req.pool,
	}
	if req.forkOf != "" {
		sb.EnvVarNames = req.envNames
	}
	if sn != nil {
		sb.SnapshotID = sn.ID
	}
	spec := sbx.Spec{
		SandboxID: sb.ID, ProviderSandboxID: sb.ProviderSandboxID, OrgID: sb.OrgID, ProjectID: sb.ProjectID,
		TemplateID: sb.TemplateID, TemplateVersion: req.templateVersion, Kind: sb.Kind, Resources: sb.Resources, Env: req.Env, Metadata: sb.Metadata, AccessToken: sb.AccessToken, Image: req.Image,
	}
	if egress != nil {
		spec.Egress = *egress
	}
	if sn != nil {
		sb.Volumes, err = m.store.SandboxVolumes(ctx, sn.SourceSandboxID)
	} else {
		sb.Volumes, err = m.mounts(ctx, c, p, sb.TemplateID, req.Volumes)
	}
	if err != nil {
		return sbx.Sandbox{}, err
	}
	spec.Volumes = sb.Volumes
	if sn != nil {
		spec.Snapshot = &sbx.SnapshotSource{ID: sn.ID, Handle: sn.Handle, Memory: sn.Memory}
	}
	if admits {
		if err := admit.Admit(ctx, spec); err != nil {
			return sbx.Sandbox{}, err
		}
	}
	from := "template " + sb.TemplateID
	switch {
	case req.forkOf != "":
		from = "a fork of sandbox " + req.forkOf
	case ready:
		from = fmt.Sprintf("template %s, restored from its ready snapshot %s", sb.TemplateID, sn.ID)
	case sn != nil:
		from = "snapshot " + sn.ID
	case req.Image != nil:
		from = "image " + sb.TemplateID
	}
	if coldWhy != "" {
		from += "; cold, not from the warm pool: " + coldWhy
	}
	creating := m.event(creation.Begin, fmt.Sprintf("provider %s, %s", p.Name(), from))
	if req.RuntimeID != "" {
		err = m.store.InsertRuntimeSandbox(ctx, req.RuntimeID, req.Once, sb, creating)
	} else {
		err = m.store.InsertSandboxOnce(ctx, req.Once, sb, creating)
	}
	if err != nil {
		return sbx.Sandbox{}, err
	}
	done := make(chan struct{})
	m.mu.Lock()
	m.creating[sb.ID] = done
	m.mu.Unlock()
	m.wg.Add(1)
	unlocked := make(chan struct{})
	go func() {
		defer m.wg.Done()
		defer func() {
			m.mu.Lock()
			delete(m.creating, sb.ID)
			m.mu.Unlock()
			close(done)
		}()
		m.runCreate(telemetry.Detach(ctx), p, spec, origin{sn: sn, fork: req.forkOf != "", member: req.pool != ""}, unlocked)
	}()
	<-unlocked // the create holds the sandbox's lock before anyone else can ask for it
	if !req.WaitReady {
		return sb, nil
	}
	return m.waitReady(ctx, sb, done)
}

// resolveImage pins an image a create asks for to the digest its registry
// serves the caller now: a provider that cannot start images refuses it.
func resolveImage(ctx context.Context, p sbx.Provider, img sbx.ImageSpec) (*sbx.ImageSpec, error) {
	starter, ok := p.(sbx.ImageStarter)
	if !ok {
		return nil, sbx.Errorf(sbx.EUnsupported, "provider %q cannot start sandboxes from OCI images: give a templateID", p.Name())
	}
	pinned, err := starter.ResolveImage(ctx, "image.uri", img)
	if err != nil {
		return nil, err
	}
	return &pinned, nil
}

// creation is the table's create: the row is written in its From state
// (starting) with its intent and settled in its To (running), or failed.
var creation, _ = sbx.Lookup(sbx.StateStarting, sbx.ActionCreate)

// runCreate calls the provider and settles the outcome, holding the sandbox's
// lock so that other operations on it wait for the create. Its parent
// carries no more than the span of the create that started it (its trace).
func (m *Manager) runCreate(parent context.Context, p sbx.Provider, spec sbx.Spec, from origin, locked chan<- struct{}) {
	ctx, cancel := context.WithTimeout(parent, m.cfg.CreateTimeout)
	defer cancel()
	unlock, _ := m.lock(ctx, spec.SandboxID) // a fresh ID: never contended
	defer unlock()
	close(locked)
	start := time.Now()
	ctx, span := telemetry.Span(ctx, "lifecycle.create.compute", attribute.String("sbx.sandbox", spec.SandboxID), attribute.String("sbx.provider", p.Name()))
	var err error
	defer func() { // recorded before the unlock: the next operation on it comes after
		telemetry.Operation(string(sbx.ActionCreate), p.Name(), err, time.Since(start))
		telemetry.End(span, err)
	}()
	inst, err := telemetry.Call(ctx, p.Name(), string(sbx.ActionCreate), func(ctx context.Context) (sbx.Instance, error) { return p.Create(ctx, spec) })
	if err == nil && from.sn != nil {
		if err = m.adopt(ctx, p, inst, from.sn, spec, from.fork); err != nil {
			p.Kill(context.WithoutCancel(ctx), inst.Handle) // its agent is its source's: it is no sandbox of its own
			err = fmt.Errorf("giving the restored sandbox its own access token: %w", err)
		}
	}
	next := ""
	if err == nil && from.member {
		if next, err = m.offer(ctx, p, inst, spec.AccessToken); err != nil {
			p.Kill(context.WithoutCancel(ctx), inst.Handle)
			err = fmt.Errorf("offering the warm sandbox's agent its next token: %w", err)
		}
	}
	settle := context.Background()
	if err != nil {
		m.log.Warn("create failed", "sandbox", spec.SandboxID, "provider", p.Name(), "err", err)
		m.fail(settle, spec.SandboxID, sbx.EndError, fmt.Sprintf("provider %s could not create the sandbox: %s", p.Name(), providerMessage(err)))
		return
	}
	_, err = m.update(settle, spec.SandboxID, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		now := m.clock.Now()
		sb.State, sb.Intent, sb.StartedAt, sb.UpdatedAt = creation.To, sbx.IntentNone, now, now
		sb.ExpiresAt = now.Add(sb.Timeout)
		sb.Handle, sb.NextToken = inst.Handle, next
		if inst.ProviderSandboxID != "" {
			sb.ProviderSandboxID = inst.ProviderSandboxID
		}
		return []sbx.Event{m.event(creation.Done, "")}, nil
	})
	if err != nil {
		m.log.Error("settling create", "sandbox", spec.SandboxID, "err", err)
		return
	}
	m.notifyReaper()
}

// origin is what a create starts from beyond its template: the snapshot
// it restores (a fork's capture, when fork), and whether it is a warm
// pool's member.
type origin struct {
	sn     *sbx.Snapshot
	fork   bool
	member bool
}

// waitReady waits for a create to settle, then for the sandbox's agent to
// be ready, each bounded by the ready timeout.
func (m *Manager) waitReady(ctx context.Context, sb sbx.Sandbox, done <-chan struct{}) (sbx.Sandbox, error) {
	select {
	case <-done:
	case <-ctx.Done():
		return sbx.Sandbox{}, ctx.Err()
	case <-m.clock.After(m.cfg.ReadyTimeout):
		cur, err := m.store.GetSandbox(ctx, "", sb.ID)
		if err != nil {
			return sbx.Sandbox{}, err
		}
		return cur, sbx.Errorf(sbx.ETimeout, "sandbox %s was not ready within %s; it is still %s (%s)",
			sb.ProviderSandboxID, m.cfg.ReadyTimeout, cur.State, diagnosticOr(cur, "no diagnostic yet"))
	}
	cur, err := m.store.GetSandbox(ctx, "", sb.ID)
	if err != nil {
		return sbx.Sandbox{}, err
	}
	if cur.State == sbx.StateFailed {
		return cur, sbx.Errorf(sbx.EProvider, "sandbox %s failed to start: %s", cur.ProviderSandboxID, cur.Diagnostic)
	}
	ready, cancel := context.WithTimeout(ctx, m.cfg.ReadyTimeout)
	defer cancel()
	if err := m.agentReady(ready, cur); err != nil {
		return cur, sbx.Errorf(sbx.ETimeout, "sandbox %s runs, but its agent was not ready within %s: %v", cur.ProviderSandboxID, m.cfg.ReadyTimeout, err)
	}
	return cur, nil
}

// fail settles a sandbox as failed with a diagnostic.
func (m *Manager) fail(ctx context.Context, id string, reason sbx.EndReason, diagnostic string) {
	_, err := m.update(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		now := m.clock.Now()
		sb.State, sb.Intent, sb.EndReason, sb.Diagnostic = sbx.StateFailed, sbx.IntentNone, reason, diagnostic
		sb.EndedAt, sb.ExpiresAt, sb.UpdatedAt = now, time.Time{}, now
		return []sbx.Event{m.event("failed", diagnostic)}, nil
	})
	if err != nil {
		m.log.Error("settling failure", "sandbox", id, "err", err)
	}
}

// checkTimeout bounds a caller's timeout.
func (m *Manager) checkTimeout(field string, d time.Duration) error {
	if d < time.Second || d > m.cfg.MaxTimeout {
		return sbx.Invalid(field, "%s must be between 1 and %d seconds", field, int64(m.cfg.MaxTimeout/time.Second))
	}
	return nil
}

// providerMessage is what a provider error says to a user.
func providerMessage(err error) string {
	var e *sbx.Error
	if errors.As(err, &e) {
		return e.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "it did not finish in time"
	}
	return err.Error()
}

func diagnosticOr(sb sbx.Sandbox, s string) string {
	if sb.Diagnostic != "" {
		return sb.Diagnostic
	}
	return s
}

// sortedKeys are an env's names, sorted: what the ledger keeps of it.
func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}
