package lifecycle

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/capability"
	"github.com/sbxdev/sbx/internal/agentcall"
)

// materialize writes a runtime's resolved capabilities into its new
// sandbox, installs their dependencies and runs their checks
// (capability.Materialize), and tells each step in the sandbox's timeline:
// capability_write, capability_check, capability_install, with _failed and
// the end of the output when one fails. A failed step leaves the sandbox
// running: its timeline says what is missing. A provider that runs no sbx
// agent gets none (capabilities_skipped, saying why).
func (m *Manager) materialize(ctx context.Context, sb sbx.Sandbox, set capability.Resolved) error {
	addr, err := m.agentAddr(ctx, sb)
	if sbx.ErrorCode(err) == sbx.EUnsupported {
		return m.store.AddEvents(ctx, sb.ID, m.event("capabilities_skipped", err.Error()))
	}
	if err != nil {
		return err
	}
	steps, err := capability.Materialize(ctx, agentSandbox{addr: addr, token: sb.AccessToken}, set)
	events := make([]sbx.Event, 0, len(steps))
	for _, st := range steps {
		name := "capability_" + st.Action
		if !st.OK {
			name += "_failed"
		}
		events = append(events, m.event(name, st.String()))
	}
	if len(events) > 0 {
		err = errors.Join(err, m.store.AddEvents(context.WithoutCancel(ctx), sb.ID, events...))
	}
	return err
}

// agentSandbox is capability.Sandbox through a sandbox's agent.
type agentSandbox struct{ addr, token string }

func (a agentSandbox) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	return agentcall.WriteFile(ctx, a.addr, a.token, path, data, mode)
}

func (a agentSandbox) Run(ctx context.Context, script string, env map[string]string, timeout time.Duration) (int, string, error) {
	return agentcall.Run(ctx, a.addr, a.token, script, env, timeout)
}
