package lifecycle

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/agentcall"
)

// AgentConn is a running sandbox's agent as one request reaches it.
type AgentConn struct {
	Sandbox sbx.Sandbox
	Addr    string // where the agent listens
	// Context is the request's, ended when the sandbox stops running: its
	// cause (context.Cause) is then an *sbx.Error saying why (Stopped).
	Context context.Context
	done    func()
	ports   sbx.PortDialer // nil: the provider reaches no other port
}

// PortAddr is where serve reaches TCP port port of the sandbox, whatever
// listens there; a provider that reaches no port but its agent's says so.
func (a *AgentConn) PortAddr(port int) (string, error) {
	if a.ports == nil {
		return "", sbx.Errorf(sbx.EUnsupported, "provider %s does not reach the ports of its sandboxes", a.Sandbox.Provider)
	}
	return a.ports.PortAddr(a.Context, a.Sandbox.Handle, port)
}

// Close ends Context and forgets the request.
func (a *AgentConn) Close() {
	if a.done != nil {
		a.done()
	}
}

// Stopped is why the sandbox stopped running while the request was in
// flight, or nil.
func (a *AgentConn) Stopped() *sbx.Error {
	var e *sbx.Error
	if errors.As(context.Cause(a.Context), &e) {
		return e
	}
	return nil
}

// Agent returns the caller's sandbox ref, running, and its agent, for a
// request that Close ends. A paused sandbox is resumed first (a hibernated
// one woken): a call to its agent is a reason to run.
func (m *Manager) Agent(ctx context.Context, c sbx.Caller, ref string) (*AgentConn, error) {
	return m.AgentFor(ctx, c, ref, "a call to its agent")
}

// AgentFor is Agent for traffic that why names in the timeline of a wake
// (an SSH session, …).
func (m *Manager) AgentFor(ctx context.Context, c sbx.Caller, ref, why string) (*AgentConn, error) {
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	return m.agent(ctx, sb.ID, traffic{why: why, wake: true})
}

// AgentOf is Agent for a sandbox's runtime URL, which names it by its
// provider sandbox ID and carries its access token instead of an API key.
// A wrong token is refused before anything else happens (the agent checks
// it again), with the same answer as a sandbox that does not exist: the
// runtime URL tells a caller without the token nothing.
func (m *Manager) AgentOf(ctx context.Context, providerSandboxID, token string) (*AgentConn, error) {
	sb, err := m.store.GetSandbox(ctx, "", providerSandboxID)
	if err != nil && sbx.ErrorCode(err) != sbx.ENotFound {
		return nil, err
	}
	if err != nil || subtle.ConstantTimeCompare([]byte(token), []byte(sb.AccessToken)) != 1 {
		return nil, noAccess()
	}
	return m.agent(ctx, sb.ID, traffic{why: "a call to its runtime URL", wake: true})
}

// Reach is Agent for traffic that its surface authorizes, to sandbox ref
// (either ID): check is asked of the sandbox as read, before anything
// happens to it, and says whether the traffic may wake it when it is
// paused (else the answer is a 409 saying it is paused and how to resume
// it); why names the traffic in the timeline of a wake. A request to a
// running sandbox reads it once: when no sandbox stopped running between
// that read and the request's registration (streams.ended), the read
// stands for the one Agent makes after registering.
func (m *Manager) Reach(ctx context.Context, ref, why string, check func(sbx.Sandbox) (wake bool, err error)) (*AgentConn, error) {
	ended := m.streams.ended.Load()
	sb, err := m.store.GetSandbox(ctx, "", ref)
	if err != nil {
		return nil, err
	}
	if err := m.awaitHandOver(ctx, sb.ID); err != nil {
		return nil, err
	}
	wake, err := check(sb)
	if err != nil {
		return nil, err
	}
	tr := traffic{why: why, wake: wake, wait: WakeWait}
	if sb.State != sbx.StateRunning {
		return m.agent(ctx, sb.ID, tr)
	}
	a := m.register(ctx, sb.ID)
	if m.streams.ended.Load() != ended { // something stopped meanwhile: read it again
		a.Close()
		return m.agent(ctx, sb.ID, tr)
	}
	if err := m.connect(ctx, a, sb); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// noAccess answers a runtime URL whose sandbox does not exist or whose
// token is not the sandbox's, alike.
func noAccess() error {
	return sbx.Errorf(sbx.EUnauthorized, "the access token does not open this runtime URL")
}

// agent registers a request to sandbox id's agent (streams.go), then finds
// the sandbox running: registered first, it ends with any change that
// takes the sandbox out of running from the moment the sandbox is seen to
// run.
func (m *Manager) agent(ctx context.Context, id string, tr traffic) (*AgentConn, error) {
	if err := m.awaitHandOver(ctx, id); err != nil {
		return nil, err
	}
	a := m.register(ctx, id)
	sb, err := m.running(ctx, id, tr)
	if err == nil {
		err = m.connect(ctx, a, sb)
	}
	if err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// register registers a request to sandbox id's agent (streams.go): its
// Context ends when the sandbox stops running.
func (m *Manager) register(ctx context.Context, id string) *AgentConn {
	ctx, cancel := context.WithCancelCause(ctx)
	remove := m.streams.add(id, cancel)
	return &AgentConn{Context: ctx, done: func() { remove(); cancel(nil) }}
}

// connect fills in where a reaches running sandbox sb: its agent, and its
// other ports when the provider reaches them.
func (m *Manager) connect(ctx context.Context, a *AgentConn, sb sbx.Sandbox) (err error) {
	a.Sandbox = sb
	if a.Addr, err = m.agentAddr(ctx, sb); err != nil {
		return err
	}
	p, _ := m.provider(sb.Provider)
	a.ports, _ = p.(sbx.PortDialer)
	return nil
}

// running returns sandbox id once created and running. A paused one is
// woken first (tr.why says by what, in the timeline) when tr.wake, else
// refused. Requests that find it paused together wake it once: the first
// resumes it under the sandbox's lock, the others then find it running.
func (m *Manager) running(ctx context.Context, id string, tr traffic) (sbx.Sandbox, error) {
	if err := m.waitCreate(ctx, id); err != nil {
		return sbx.Sandbox{}, err
	}
	sb, err := m.store.GetSandbox(ctx, "", id)
	if err != nil {
		return sb, err
	}
	if sb.State == sbx.StatePaused && !tr.wake {
		return sb, &sbx.Error{Code: sbx.EConflict, RetryAfter: 5 * time.Second, Message: fmt.Sprintf("sandbox %s is paused, and its previews do not wake it (preview.wake is false): "+
			"resume it (sbx sandbox resume %[1]s, or POST /api/v1/sandboxes/%[1]s/resume) and try again", sb.ProviderSandboxID)}
	}
	if sb.State == sbx.StatePaused {
		woken, err := m.wakeFor(ctx, sb, tr)
		if err != nil {
			cur, e := m.store.GetSandbox(ctx, "", id)
			if e != nil || cur.State != sbx.StateRunning {
				return woken, err
			}
			woken = cur // another request's wake came first
		}
		sb = woken
	}
	if sb.State != sbx.StateRunning {
		return sb, sbx.Errorf(sbx.EConflict, "sandbox %s is %s: its agent answers only while it runs", sb.ProviderSandboxID, sb.State)
	}
	return sb, nil
}

// traffic is what reaches a sandbox through serve: why names it in the
// timeline of a wake, wake says whether it may wake a paused sandbox, and
// wait, when set, bounds how long it waits for the wake.
type traffic struct {
	why  string
	wake bool
	wait time.Duration
}

// WakeWait bounds how long preview traffic waits for the wake it set off:
// past it, the answer is a 503 with Retry-After while the wake goes on.
// Calls to the agent (the API, SDKs, SSH) wait for the wake however long
// it takes, as a resume would.
const WakeWait = 30 * time.Second

// wakeFor resumes paused sandbox sb for tr, waiting tr.wait at most when
// set; a caller who leaves leaves the wake going.
func (m *Manager) wakeFor(ctx context.Context, sb sbx.Sandbox, tr traffic) (sbx.Sandbox, error) {
	why := "woken by " + tr.why
	if tr.wait == 0 {
		return m.resume(ctx, sb.ID, 0, why)
	}
	type result struct {
		sb  sbx.Sandbox
		err error
	}
	done := make(chan result, 1)
	go func() {
		woken, err := m.resume(context.WithoutCancel(ctx), sb.ID, 0, why)
		done <- result{woken, err}
	}()
	select {
	case r := <-done:
		return r.sb, r.err
	case <-m.clock.After(tr.wait):
		return sb, &sbx.Error{Code: sbx.EUnavailable, RetryAfter: 5 * time.Second,
			Message: fmt.Sprintf("sandbox %s is still waking after %s; try again shortly", sb.ProviderSandboxID, tr.wait)}
	case <-ctx.Done():
		return sb, ctx.Err()
	}
}

// agentAddr asks the sandbox's provider where its agent listens.
func (m *Manager) agentAddr(ctx context.Context, sb sbx.Sandbox) (string, error) {
	p, err := m.provider(sb.Provider)
	if err != nil {
		return "", err
	}
	d, ok := p.(sbx.AgentDialer)
	if !ok {
		return "", sbx.Errorf(sbx.EUnsupported, "provider %s runs no sbx agent in its sandboxes", p.Name())
	}
	return d.AgentAddr(ctx, sb.Handle)
}

// agentReady waits until a running sandbox's agent is ready, when it runs one.
func (m *Manager) agentReady(ctx context.Context, sb sbx.Sandbox) error {
	addr, err := m.agentAddr(ctx, sb)
	if sbx.ErrorCode(err) == sbx.EUnsupported {
		return nil
	}
	if err != nil {
		return err
	}
	return agentcall.Ready(ctx, addr, sb.AccessToken)
}

// RotateToken gives a running sandbox a new access token: its agent takes
// it first, then the ledger records it.
func (m *Manager) RotateToken(ctx context.Context, sb sbx.Sandbox) (sbx.Sandbox, error) {
	token := newToken()
	addr, err := m.agentAddr(ctx, sb)
	switch {
	case sbx.ErrorCode(err) == sbx.EUnsupported: // no agent: the ledger's token is all there is
	case err != nil:
		return sb, err
	default:
		if err := agentcall.SetToken(ctx, addr, sb.AccessToken, token); err != nil {
			return sb, sbx.Errorf(sbx.EProvider, "rotating the access token of sandbox %s: %v", sb.ProviderSandboxID, err)
		}
	}
	return m.update(ctx, sb.ID, func(s *sbx.Sandbox) ([]sbx.Event, error) {
		s.AccessToken, s.UpdatedAt = token, m.clock.Now()
		return []sbx.Event{m.event("token-rotated", "the old access token no longer works")}, nil
	})
}
