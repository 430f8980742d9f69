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
// (capability.Materialize), and tells each step in the sandbox's timeline
// as soon as it is done: capability_write, capability_check,
// capability_install, with _failed and the end of the output when one
// fails. A failed step leaves the sandbox running: its timeline says what is
// missing. A provider that runs no sbx agent gets none (capabilities_skipped,
// saying why).
func (r *Runtimes) materialize(ctx context.Context, sb sbx.Sandbox, set capability.Resolved) error {
	if _, err := r.m.agentAddr(ctx, sb); sbx.ErrorCode(err) == sbx.EUnsupported {
		return r.store.AddEvents(ctx, sb.ID, r.m.event("capabilities_skipped", err.Error()))
	} else if err != nil {
		return err
	}
	var failed error
	_, err := capability.Materialize(ctx, agentSandbox{r: r, id: sb.ID}, set, func(st capability.Step) {
		name := "capability_" + st.Action
		if !st.OK {
			name += "_failed"
		}
		failed = errors.Join(failed, r.store.AddEvents(ctx, sb.ID, r.m.event(name, st.String())))
	})
	return errors.Join(err, failed)
}

// agentSandbox is capability.Sandbox through a sandbox's agent, whose
// address and access token it reads anew for each call: a wake may move the
// one, a connect rotate the other.
type agentSandbox struct {
	r  *Runtimes
	id string
}

func (a agentSandbox) WriteFile(ctx context.Context, path string, data []byte, mode fs.FileMode) error {
	addr, token, err := a.agent(ctx)
	if err != nil {
		return err
	}
	return agentcall.WriteFile(ctx, addr, token, path, data, mode)
}

func (a agentSandbox) Run(ctx context.Context, script string, env map[string]string, timeout time.Duration) (int, string, error) {
	addr, token, err := a.agent(ctx)
	if err != nil {
		return 0, "", err
	}
	return agentcall.Run(ctx, addr, token, script, env, timeout)
}

// agent is where the sandbox's agent is now, and its token; a sandbox that
// is not running is an error (a reset or pause came in between).
func (a agentSandbox) agent(ctx context.Context) (addr, token string, err error) {
	sb, err := a.r.store.GetSandbox(ctx, "", a.id)
	if err != nil {
		return "", "", err
	}
	if sb.State != sbx.StateRunning {
		return "", "", sbx.Errorf(sbx.EConflict, "sandbox %s is %s", sb.ProviderSandboxID, sb.State)
	}
	addr, err = a.r.m.agentAddr(ctx, sb)
	return addr, sb.AccessToken, err
}
