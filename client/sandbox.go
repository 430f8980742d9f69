package client

import (
	"context"
	"sync"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// Sandbox is a handle on one sandbox, as Create and Connect return it. Its
// methods address the sandbox by its sbx UUID and keep Data up to date with
// each answer; Commands, Files and Pty reach its agent through the server.
// It is safe for concurrent use.
type Sandbox struct {
	Commands *Commands // processes: run, start, follow, signal
	Files    *Files    // the filesystem: read, write, list, watch
	Pty      *Pty      // interactive terminals
	Code     *Code     // stateful code contexts (Jupyter kernels): run code, get results

	c    *Client
	mu   sync.Mutex
	data apiv1.Sandbox
}

func (c *Client) handle(data *apiv1.Sandbox) *Sandbox {
	return &Sandbox{c: c, data: *data, Commands: c.Commands(data.ID), Files: c.Files(data.ID), Pty: c.Pty(data.ID), Code: c.Code(data.ID)}
}

// ID is the sandbox's sbx UUID.
func (s *Sandbox) ID() string { return s.Data().ID }

// SandboxID is the provider sandbox ID, the one `sbx sandbox` commands take.
func (s *Sandbox) SandboxID() string { return s.Data().SandboxID }

// Data is the sandbox as the server last answered it.
func (s *Sandbox) Data() apiv1.Sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data
}

// Info fetches the sandbox afresh.
func (s *Sandbox) Info(ctx context.Context) (*apiv1.Sandbox, error) {
	return s.update(s.c.Get(ctx, s.ID()))
}

// SetTimeout sets the sandbox's timeout to d from now.
func (s *Sandbox) SetTimeout(ctx context.Context, d time.Duration) error {
	return s.settle(s.c.SetTimeout(ctx, s.ID(), d))
}

// SetEgress replaces the sandbox's egress policy, at once.
func (s *Sandbox) SetEgress(ctx context.Context, e apiv1.Egress) error {
	return s.settle(s.c.SetEgress(ctx, s.ID(), e))
}

// Refresh keeps the sandbox alive for at least d more; 0 is the server's default.
func (s *Sandbox) Refresh(ctx context.Context, d time.Duration) error {
	return s.settle(s.c.Refresh(ctx, s.ID(), d))
}

// Pause pauses the sandbox, frozen in memory.
func (s *Sandbox) Pause(ctx context.Context) error { return s.settle(s.c.Pause(ctx, s.ID())) }

// Hibernate checkpoints the sandbox to disk and releases its memory.
func (s *Sandbox) Hibernate(ctx context.Context) error { return s.settle(s.c.Hibernate(ctx, s.ID())) }

// Resume resumes the paused sandbox; timeout 0 keeps its timeout.
func (s *Sandbox) Resume(ctx context.Context, timeout time.Duration) error {
	return s.settle(s.c.Resume(ctx, s.ID(), timeout))
}

// Connect refreshes runtime access, resuming the sandbox when paused;
// opts may be nil.
func (s *Sandbox) Connect(ctx context.Context, opts *ConnectOptions) error {
	fresh, err := s.c.Connect(ctx, s.ID(), opts)
	if err != nil {
		return err
	}
	return s.settle(&fresh.data, nil)
}

// Delete kills the sandbox.
func (s *Sandbox) Delete(ctx context.Context) error { return s.settle(s.c.Delete(ctx, s.ID())) }

// Logs returns a page of the sandbox's log, oldest first.
func (s *Sandbox) Logs(ctx context.Context, cursor string, limit int) (*apiv1.LogPage, error) {
	return s.c.Logs(ctx, s.ID(), cursor, limit)
}

// Metrics measures the running sandbox now.
func (s *Sandbox) Metrics(ctx context.Context) (*apiv1.Metrics, error) {
	return s.c.Metrics(ctx, s.ID())
}

// update records a successful answer as the sandbox's data and passes it on.
func (s *Sandbox) update(sb *apiv1.Sandbox, err error) (*apiv1.Sandbox, error) {
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.data = *sb
	s.mu.Unlock()
	return sb, nil
}

// settle is update for the methods that answer only an error.
func (s *Sandbox) settle(sb *apiv1.Sandbox, err error) error {
	_, err = s.update(sb, err)
	return err
}
