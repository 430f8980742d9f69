package lifecycle

import (
	"context"
	"crypto/subtle"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/agentcall"
)

// Agent returns the caller's sandbox ref, running, and the address of its
// agent. A paused sandbox is resumed first (a hibernated one woken): a call
// to its agent is a reason to run.
func (m *Manager) Agent(ctx context.Context, c sbx.Caller, ref string) (sbx.Sandbox, string, error) {
	sb, err := m.Get(ctx, c, ref)
	if err != nil {
		return sb, "", err
	}
	return m.agent(ctx, sb.ID)
}

// AgentOf is Agent for a sandbox's runtime URL, which names it by its
// provider sandbox ID and carries its access token instead of an API key.
// A wrong token is refused before anything else happens (the agent checks
// it again).
func (m *Manager) AgentOf(ctx context.Context, providerSandboxID, token string) (sbx.Sandbox, string, error) {
	sb, err := m.store.GetSandbox(ctx, "", providerSandboxID)
	if err != nil {
		return sb, "", err
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(sb.AccessToken)) != 1 {
		return sbx.Sandbox{}, "", sbx.Errorf(sbx.EUnauthorized, "the access token is not sandbox %s's", providerSandboxID)
	}
	return m.agent(ctx, sb.ID)
}

func (m *Manager) agent(ctx context.Context, id string) (sbx.Sandbox, string, error) {
	if err := m.waitCreate(ctx, id); err != nil {
		return sbx.Sandbox{}, "", err
	}
	sb, err := m.store.GetSandbox(ctx, "", id)
	if err != nil {
		return sb, "", err
	}
	if sb.State == sbx.StatePaused {
		if sb, err = m.resume(ctx, id, 0); err != nil {
			return sb, "", err
		}
	}
	if sb.State != sbx.StateRunning {
		return sb, "", sbx.Errorf(sbx.EConflict, "sandbox %s is %s: its agent answers only while it runs", sb.ProviderSandboxID, sb.State)
	}
	addr, err := m.agentAddr(ctx, sb)
	return sb, addr, err
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
	return m.store.UpdateSandbox(ctx, sb.ID, func(s *sbx.Sandbox) ([]sbx.Event, error) {
		s.AccessToken, s.UpdatedAt = token, m.clock.Now()
		return []sbx.Event{m.event("token-rotated", "the old access token no longer works")}, nil
	})
}
