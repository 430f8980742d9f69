package lifecycle

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/sbxdev/sbx"
)

// Requests to a sandbox's agent (streams above all: a command's output, a
// terminal, a watch) end when the sandbox stops running. A killed or dead
// sandbox's connections do not: its network goes without a FIN or a reset,
// so a stream would wait for bytes that never come. Every request the proxy
// makes through Agent is registered here under its sandbox, and a change
// that takes the sandbox out of running (update) ends them all at once,
// with why as their context's cause.

// streams are the in-flight requests to agents, by sandbox UUID.
type streams struct {
	mu    sync.Mutex
	by    map[string]map[*context.CancelCauseFunc]struct{}
	ended atomic.Uint64 // how many times end ran: a sandbox seen running before and after saw none stop
}

// add registers cancel under sandbox id; remove forgets it.
func (s *streams) add(id string, cancel context.CancelCauseFunc) (remove func()) {
	key := &cancel
	s.mu.Lock()
	if s.by == nil {
		s.by = map[string]map[*context.CancelCauseFunc]struct{}{}
	}
	if s.by[id] == nil {
		s.by[id] = map[*context.CancelCauseFunc]struct{}{}
	}
	s.by[id][key] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.by[id], key)
		if len(s.by[id]) == 0 {
			delete(s.by, id)
		}
	}
}

// end ends every request registered under sandbox id with why.
func (s *streams) end(id string, why error) {
	s.ended.Add(1)
	s.mu.Lock()
	open := s.by[id]
	delete(s.by, id)
	s.mu.Unlock()
	for cancel := range open {
		(*cancel)(why)
	}
}

// update is the ledger's UpdateSandbox, through which every change of a
// sandbox goes: one that takes the sandbox out of running also ends the
// requests in flight to its agent, saying why.
func (m *Manager) update(ctx context.Context, id string, fn func(*sbx.Sandbox) ([]sbx.Event, error)) (sbx.Sandbox, error) {
	var was sbx.State
	sb, err := m.store.UpdateSandbox(ctx, id, func(sb *sbx.Sandbox) ([]sbx.Event, error) {
		was = sb.State
		return fn(sb)
	})
	if err == nil && was == sbx.StateRunning && sb.State != sbx.StateRunning {
		m.streams.end(sb.ID, Stopped(sb))
	}
	return sb, err
}

// Stopped says why sb no longer runs, as the requests to its agent end
// with: deleted, timed out, paused, or failed with its diagnostic (out of
// memory, …).
func Stopped(sb sbx.Sandbox) *sbx.Error {
	id := sb.ProviderSandboxID
	switch sb.State {
	case sbx.StateRunning, sbx.StateStarting:
		return nil
	case sbx.StatePaused:
		verb := "paused"
		if sb.Hibernated {
			verb = "hibernated"
		}
		switch sb.PauseReason {
		case sbx.PauseTimeout:
			return sbx.Errorf(sbx.EConflict, "sandbox %s was %s: it reached its timeout", id, verb)
		case sbx.PauseInsufficientCredits:
			return sbx.Errorf(sbx.EConflict, "sandbox %s was %s: its org has no credits left", id, verb)
		case sbx.PauseMemberLimitExceeded:
			return sbx.Errorf(sbx.EConflict, "sandbox %s was %s: its workspace has more members than its plan allows", id, verb)
		}
		return sbx.Errorf(sbx.EConflict, "sandbox %s was %s", id, verb)
	case sbx.StateFailed:
		return sbx.Errorf(sbx.EConflict, "sandbox %s failed: %s", id, diagnosticOr(sb, "its compute ended"))
	}
	switch sb.EndReason {
	case sbx.EndDeleted:
		return sbx.Errorf(sbx.EConflict, "sandbox %s was deleted", id)
	case sbx.EndTimeout:
		return sbx.Errorf(sbx.EConflict, "sandbox %s was killed: it reached its timeout", id)
	}
	return sbx.Errorf(sbx.EConflict, "sandbox %s stopped: %s", id, diagnosticOr(sb, string(sb.State)))
}
