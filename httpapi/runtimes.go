package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/lifecycle"
)

// A workspace's runtimes, one per project: everyone in the workspace reads
// and drives them; a project-scoped key reaches only its project's.

func (s *Server) listRuntimes(w http.ResponseWriter, r *http.Request) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return
	}
	if _, ok := s.roleIn(w, r, ws, sbx.RoleMember, "listing runtimes"); !ok {
		return
	}
	p, ok := s.page(w, r)
	if !ok {
		return
	}
	list, next, err := s.runtimes.List(r.Context(), caller(r), ws, p)
	if err != nil {
		s.error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, apiv1.RuntimeList{Items: renderAll(list, s.runtimeBody), NextCursor: next})
}

func (s *Server) getRuntime(w http.ResponseWriter, r *http.Request) {
	if rt, ok := s.runtime(w, r, "reading a runtime"); ok {
		s.renderRuntime(w, r, http.StatusOK, rt)
	}
}

// updateRuntime replaces the fields of the runtime's configuration that the
// body names. A sandbox already running keeps what it was made with.
func (s *Server) updateRuntime(w http.ResponseWriter, r *http.Request) {
	var body apiv1.UpdateRuntimeRequest
	if !s.decode(w, r, &body) {
		return
	}
	rt, ok := s.runtime(w, r, "configuring a runtime")
	if !ok {
		return
	}
	rt, err := s.runtimes.Configure(r.Context(), rt, lifecycle.RuntimeChange{TemplateID: body.TemplateID, CPU: body.CPU,
		MemoryMB: body.MemoryMB, Timeout: body.Timeout, Ports: body.Ports, Env: body.Env, Labels: body.Labels, Egress: egressOf(body.Egress)})
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.renderRuntime(w, r, http.StatusOK, rt)
}

// startRuntime provisions a sandbox for an idle runtime and answers once
// it is ready.
func (s *Server) startRuntime(w http.ResponseWriter, r *http.Request) {
	var body apiv1.StartRuntimeRequest
	if !s.decode(w, r, &body) {
		return
	}
	rt, ok := s.runtime(w, r, "starting a runtime")
	if !ok {
		return
	}
	start := lifecycle.RuntimeStart{Resources: rt.Config.Resources, SecretIDs: body.SecretIDs}
	var err error
	if start.Once, err = once(r, body); err != nil {
		s.error(w, r, err)
		return
	}
	if start.Timeout, err = seconds("requested_runtime_limit_seconds", body.RequestedRuntimeLimitSeconds, false, 0); err != nil {
		s.error(w, r, err)
		return
	}
	rt, err = s.runtimes.Start(r.Context(), caller(r), rt, start)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.renderRuntime(w, r, http.StatusOK, rt)
}

func (s *Server) pauseRuntime(w http.ResponseWriter, r *http.Request) {
	s.runtimeAction(w, r, "pausing a runtime", s.runtimes.Pause)
}

func (s *Server) resumeRuntime(w http.ResponseWriter, r *http.Request) {
	s.runtimeAction(w, r, "resuming a runtime", s.runtimes.Resume)
}

func (s *Server) resetRuntime(w http.ResponseWriter, r *http.Request) {
	s.runtimeAction(w, r, "resetting a runtime", s.runtimes.Reset)
}

func (s *Server) keepaliveRuntime(w http.ResponseWriter, r *http.Request) {
	var body apiv1.KeepaliveRuntimeRequest
	if !s.decode(w, r, &body) {
		return
	}
	d, err := seconds("extend_seconds", body.ExtendSeconds, false, 0)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.runtimeAction(w, r, "keeping a runtime alive", func(ctx context.Context, c sbx.Caller, rt sbx.Runtime) (sbx.Runtime, error) {
		return s.runtimes.Keepalive(ctx, c, rt, d)
	})
}

// runtimeAction runs an action on the {runtime_id} of the path and answers
// the runtime as it leaves it.
func (s *Server) runtimeAction(w http.ResponseWriter, r *http.Request, what string, act func(context.Context, sbx.Caller, sbx.Runtime) (sbx.Runtime, error)) {
	rt, ok := s.runtime(w, r, what)
	if !ok {
		return
	}
	rt, err := act(r.Context(), caller(r), rt)
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.renderRuntime(w, r, http.StatusOK, rt)
}

// runtime finds the {runtime_id} of the path in the {workspace} of the
// caller's org, for a caller who is a member there (what names the action);
// on failure it has answered.
func (s *Server) runtime(w http.ResponseWriter, r *http.Request, what string) (sbx.Runtime, bool) {
	ws, ok := s.workspace(w, r)
	if !ok {
		return sbx.Runtime{}, false
	}
	if _, ok := s.roleIn(w, r, ws, sbx.RoleMember, what); !ok {
		return sbx.Runtime{}, false
	}
	rt, err := s.runtimes.Get(r.Context(), caller(r), ws, r.PathValue("runtime_id"))
	if err != nil {
		s.error(w, r, err)
		return rt, false
	}
	return rt, true
}

// renderRuntime answers a runtime with its current sandbox and that
// sandbox's timeline (where its capabilities' materialization is told).
func (s *Server) renderRuntime(w http.ResponseWriter, r *http.Request, status int, rt sbx.Runtime) {
	if rt.SandboxID == "" {
		writeJSON(w, status, s.runtimeBody(rt))
		return
	}
	sb, timeline, err := s.runtimes.Sandbox(r.Context(), rt)
	if err != nil {
		s.error(w, r, err)
		return
	}
	out, body := s.runtimeBody(rt), s.sandbox(sb, timeline)
	out.Sandbox = &body
	writeJSON(w, status, out)
}

// runtimeBody is a runtime as the API shows it, without its sandbox.
func (s *Server) runtimeBody(rt sbx.Runtime) apiv1.Runtime {
	c := rt.Config
	return apiv1.Runtime{
		ID: rt.ID, WorkspaceID: rt.WorkspaceID, ProjectID: rt.ProjectID, Status: rt.Status,
		Config: apiv1.RuntimeConfig{TemplateID: c.TemplateID, CPU: float64(c.Resources.MilliCPU) / 1000, MemoryMB: c.Resources.MemoryMB,
			Timeout: int64(c.Timeout / time.Second), Ports: c.Ports, Env: c.Env, Labels: c.Labels, Egress: renderEgress(c.Egress)},
		SandboxID: rt.ProviderSandboxID, CreatedAt: rt.CreatedAt, UpdatedAt: rt.UpdatedAt,
	}
}
