package lifecycle

import (
	"context"
	"fmt"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/internal/agentcall"
)

// poolStore: templates' warm pools, their members and a checkout.
type poolStore interface {
	SetPool(ctx context.Context, p sbx.Pool) error
	DeletePool(ctx context.Context, templateID string) error
	GetPool(ctx context.Context, templateID string) (sbx.Pool, error)
	Pools(ctx context.Context) ([]sbx.Pool, error)
	PoolMembers(ctx context.Context, templateID string) ([]sbx.Sandbox, error)
	CheckOut(ctx context.Context, templateID string, res sbx.Resources, once *sbx.Once, now time.Time, fn func(*sbx.Sandbox) []sbx.Event) (sbx.Sandbox, string, error)
	GetOrg(ctx context.Context, ref string) (sbx.Org, error) // a pool's owner, whose plan and KYC its members' creates go by
}

// MaxPoolSize bounds a pool's max_ready.
const MaxPoolSize = 1000

// PoolStatus is a pool and what it holds now.
type PoolStatus struct {
	sbx.Pool
	sbx.PoolCount
}

// SetPool sets template's warm pool (the operator's): its members are of
// size res, owned by c's project while they wait. The refill follows.
func (m *Manager) SetPool(ctx context.Context, c sbx.Caller, template string, minReady, maxReady int, res sbx.Resources) (PoolStatus, error) {
	if err := authz.Operator(c, "set a template's warm pool"); err != nil {
		return PoolStatus{}, err
	}
	var p sbx.Problems
	CheckTemplate(&p, "template", template)
	if minReady < 0 || maxReady < 1 || minReady > maxReady || maxReady > MaxPoolSize {
		p.Add("min_ready", "want 0 <= min_ready <= max_ready, 1 <= max_ready <= %d", MaxPoolSize)
	}
	if err := p.Err(); err != nil {
		return PoolStatus{}, err
	}
	prov, err := m.provider(m.cfg.DefaultProvider)
	if err != nil {
		return PoolStatus{}, err
	}
	if a, ok := prov.(sbx.Admitter); ok { // the template must exist on the provider
		if err := a.Admit(ctx, sbx.Spec{TemplateID: template, ProviderSandboxID: "pool-check", Resources: res}); err != nil {
			return PoolStatus{}, err
		}
	}
	pool := sbx.Pool{TemplateID: template, OrgID: c.Org.ID, WorkspaceID: c.Workspace.ID, ProjectID: c.Project.ID,
		MinReady: minReady, MaxReady: maxReady, Resources: res, UpdatedAt: m.clock.Now()}
	if err := m.store.SetPool(ctx, pool); err != nil {
		return PoolStatus{}, err
	}
	m.notifyPools()
	return m.poolStatus(ctx, pool)
}

// Pools lists every warm pool with what it holds (the operator's).
func (m *Manager) Pools(ctx context.Context, c sbx.Caller) ([]PoolStatus, error) {
	if err := authz.Operator(c, "list warm pools"); err != nil {
		return nil, err
	}
	pools, err := m.store.Pools(ctx)
	if err != nil {
		return nil, err
	}
	out := []PoolStatus{}
	for _, p := range pools {
		st, err := m.poolStatus(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// DeletePool removes template's warm pool and kills its waiting members:
// the pool's row goes first, so no member is made after the list is read
// (the ledger refuses one of a pool that is gone), and a member checked out
// meanwhile is not killed.
func (m *Manager) DeletePool(ctx context.Context, c sbx.Caller, template string) error {
	if err := authz.Operator(c, "delete a template's warm pool"); err != nil {
		return err
	}
	if err := m.store.DeletePool(ctx, template); err != nil {
		return err
	}
	members, err := m.store.PoolMembers(ctx, template)
	if err != nil {
		return err
	}
	for _, sb := range members {
		stillMember := func(sb sbx.Sandbox) error { // not one checked out meanwhile
			if sb.Pool != template {
				return sbx.Errorf(sbx.EConflict, "sandbox %s was checked out", sb.ProviderSandboxID)
			}
			return nil
		}
		if _, err := m.killIf(ctx, sb.ID, sbx.EndDeleted, stillMember); err != nil && sbx.ErrorCode(err) != sbx.EConflict {
			return err
		}
	}
	return nil
}

func (m *Manager) poolStatus(ctx context.Context, p sbx.Pool) (PoolStatus, error) {
	members, err := m.store.PoolMembers(ctx, p.TemplateID)
	if err != nil {
		return PoolStatus{}, err
	}
	return PoolStatus{Pool: p, PoolCount: countMembers(members)}, nil
}

func countMembers(members []sbx.Sandbox) sbx.PoolCount {
	var n sbx.PoolCount
	for _, sb := range members {
		switch {
		case sb.State == sbx.StateRunning && sb.Intent == sbx.IntentNone:
			n.Ready++
		case sb.State == sbx.StateStarting:
			n.Starting++
		}
	}
	return n
}

// fromPool answers a create from its template's warm pool when its mode
// and options allow: the sandbox checked out, or why not (a note for the
// timeline of the cold create that follows), or the error of a create that
// requires the pool.
func (m *Manager) fromPool(ctx context.Context, c sbx.Caller, p sbx.Provider, req CreateRequest, egress *sbx.Egress) (sbx.Sandbox, string, error) {
	if req.PoolMode == sbx.PoolRequire && p.Name() != m.cfg.DefaultProvider {
		return sbx.Sandbox{}, "", sbx.Errorf(sbx.ENoWarmSandbox, "warm_pool_unavailable: warm pools hold sandboxes of the default provider, %s, not %s", m.cfg.DefaultProvider, p.Name())
	}
	if req.PoolMode == sbx.PoolBypass || req.pool != "" || req.RuntimeID != "" || req.Image != nil || req.SnapshotID != "" || p.Name() != m.cfg.DefaultProvider {
		return sbx.Sandbox{}, "", nil
	}
	require := req.PoolMode == sbx.PoolRequire
	cold := func(why string) (sbx.Sandbox, string, error) {
		if require {
			return sbx.Sandbox{}, "", sbx.Errorf(sbx.ENoWarmSandbox, "warm_pool_unavailable: %s", why)
		}
		return sbx.Sandbox{}, why, nil
	}
	pool, err := m.store.GetPool(ctx, req.TemplateID)
	if sbx.ErrorCode(err) == sbx.ENotFound {
		if require {
			return cold(fmt.Sprintf("template %s has no warm pool", req.TemplateID))
		}
		return sbx.Sandbox{}, "", nil
	}
	if err != nil {
		return sbx.Sandbox{}, "", err
	}
	switch {
	case len(req.Volumes) > 0:
		return cold("a warm sandbox mounts no volumes")
	case req.Resources.GPU != nil:
		return cold("a warm sandbox has no GPU")
	case req.Resources != pool.Resources:
		return cold(fmt.Sprintf("the warm pool's sandboxes have %g vCPU, %d MB of memory and %d MB of disk, not what this create asks",
			float64(pool.Resources.MilliCPU)/1000, pool.Resources.MemoryMB, pool.Resources.DiskMB))
	}
	token := newToken()
	names := sortedKeys(req.Env)
	var waited *sbx.Egress // the member's policy, which a create naming the same keeps
	offered := false       // its agent takes the caller's token already
	sb, old, err := m.store.CheckOut(ctx, req.TemplateID, pool.Resources, req.Once, m.clock.Now(), func(sb *sbx.Sandbox) []sbx.Event {
		now := m.clock.Now()
		sb.OrgID, sb.WorkspaceID, sb.ProjectID, sb.Kind = c.Org.ID, c.Workspace.ID, c.Project.ID, req.Kind
		sb.Timeout, sb.ExpiresAt, sb.AutoPause = req.Timeout, now.Add(req.Timeout), req.AutoPause
		sb.Metadata, sb.EnvVarNames, sb.AccessToken, sb.Preview = req.Metadata, names, token, req.Preview
		if sb.NextToken != "" { // its agent takes it already
			sb.AccessToken, offered = sb.NextToken, true
		}
		sb.NextToken = ""
		if req.Ports != nil {
			sb.Ports = req.Ports
		}
		waited = sb.Egress
		if egress != nil {
			sb.Egress = egress
		}
		return []sbx.Event{m.event("checked_out", "from the warm pool of template "+req.TemplateID)}
	})
	if err != nil {
		return sbx.Sandbox{}, "", err
	}
	if sb.ID == "" {
		return cold(fmt.Sprintf("the warm pool of template %s has no sandbox ready", req.TemplateID))
	}
	m.notifyPools()
	egressChanged := !sameEgress(waited, sb.Egress)
	if offered && !egressChanged {
		// It answers as it is: its agent takes the caller's token. Its
		// env and the end of the old token follow at once, and every
		// request to its agent waits for them (awaitHandOver).
		m.handOverLater(p, sb, sb.AccessToken, req.Env)
		return sb, "", nil
	}
	if err := m.handOver(ctx, p, sb, old, req.Env, egressChanged); err != nil {
		m.kill(context.WithoutCancel(ctx), sb.ID, sbx.EndError)
		return cold(fmt.Sprintf("a warm sandbox could not be handed over (%s)", providerMessage(err)))
	}
	return sb, "", nil
}

// handOverLater hands a checked-out sandbox over in the background (with
// the caller's token, which its agent takes already): until it is done,
// requests to its agent wait (awaitHandOver); if it fails, the sandbox is
// failed with why.
func (m *Manager) handOverLater(p sbx.Provider, sb sbx.Sandbox, token string, env map[string]string) {
	done := make(chan struct{})
	m.mu.Lock()
	m.handing[sb.ID] = done
	m.mu.Unlock()
	m.wg.Go(func() {
		defer func() {
			m.mu.Lock()
			delete(m.handing, sb.ID)
			m.mu.Unlock()
			close(done)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), m.cfg.ReadyTimeout)
		defer cancel()
		if err := m.handOver(ctx, p, sb, token, env, false); err != nil {
			m.log.Warn("handing a warm sandbox over", "sandbox", sb.ID, "err", err)
			m.fail(context.Background(), sb.ID, sbx.EndError, "its handover from the warm pool failed: "+providerMessage(err))
			p.Kill(context.Background(), sb.Handle)
		}
	})
}

// awaitHandOver waits until sandbox id's handover from a warm pool, if one
// is under way in this serve, is done.
func (m *Manager) awaitHandOver(ctx context.Context, id string) error {
	return m.await(ctx, m.handing, id)
}

// offer has a new pool member's agent take a next token beside its own,
// and answers it: its checkout makes it the access token with no call to
// the agent. A provider whose sandboxes run no agent needs none.
func (m *Manager) offer(ctx context.Context, p sbx.Provider, inst sbx.Instance, token string) (string, error) {
	d, ok := p.(sbx.AgentDialer)
	if !ok {
		return "", nil
	}
	addr, err := d.AgentAddr(ctx, inst.Handle)
	if err != nil {
		return "", err
	}
	next := newToken()
	return next, agentcall.Offer(ctx, addr, token, next)
}

// handOver gives a checked-out sandbox's agent its new owner's token and
// env, and its provider its egress policy when it changed.
func (m *Manager) handOver(ctx context.Context, p sbx.Provider, sb sbx.Sandbox, old string, env map[string]string, egress bool) error {
	if d, ok := p.(sbx.AgentDialer); ok {
		addr, err := d.AgentAddr(ctx, sb.Handle)
		if err != nil {
			return err
		}
		if err := agentcall.Adopt(ctx, addr, old, sb.AccessToken, env, nil); err != nil {
			return err
		}
	}
	if s, ok := p.(sbx.EgressSetter); ok && egress && sb.Egress != nil {
		return s.SetEgress(ctx, sb.Handle, *sb.Egress)
	}
	return nil
}

// RunPools keeps every warm pool filled until ctx ends: each interval, and
// at once after a checkout or a change of a pool.
func (l *Loops) RunPools(ctx context.Context, every time.Duration) {
	for {
		l.FillPools(ctx)
		select {
		case <-ctx.Done():
			return
		case <-l.m.poolWake:
		case <-l.m.clock.After(every):
		}
	}
}

// FillPools starts members until each pool has MinReady ready or starting
// (never more than MaxReady); a pool whose create fails waits for the
// next round.
func (l *Loops) FillPools(ctx context.Context) {
	pools, err := l.m.store.Pools(ctx)
	if err != nil {
		l.logLoop(ctx, "pools: listing", err)
		return
	}
	for _, p := range pools {
		st, err := l.m.poolStatus(ctx, p)
		if err != nil {
			l.logLoop(ctx, "pools: counting", err, "template", p.TemplateID)
			continue
		}
		org, err := l.m.store.GetOrg(ctx, p.OrgID)
		if err != nil {
			l.logLoop(ctx, "pools: reading the owner", err, "template", p.TemplateID)
			continue
		}
		owner := sbx.Caller{Org: org, Workspace: sbx.Workspace{ID: p.WorkspaceID}, Project: sbx.Project{ID: p.ProjectID}}
		for n := st.Ready + st.Starting; n < min(p.MinReady, p.MaxReady); n++ {
			_, err := l.m.Create(ctx, owner, CreateRequest{TemplateID: p.TemplateID, Resources: p.Resources, Kind: sbx.KindTask,
				Timeout: l.m.cfg.MaxTimeout, PoolMode: sbx.PoolBypass, pool: p.TemplateID, Metadata: map[string]string{PoolKey: p.TemplateID}})
			if err != nil {
				l.logLoop(ctx, "pools: starting a member", err, "template", p.TemplateID)
				break
			}
		}
	}
}

// PoolKey is the metadata key a pool member waits with.
const PoolKey = "sbx.pool"

func (m *Manager) notifyPools() {
	select {
	case m.poolWake <- struct{}{}:
	default:
	}
}

// sameEgress reports whether two policies are the same (nil: none).
func sameEgress(a, b *sbx.Egress) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
