package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// maxRefresh bounds a refresh's duration, in seconds.
const maxRefresh = 3600

// timed is a lifecycle action that takes a duration.
type timed func(ctx context.Context, c sbx.Caller, ref string, d time.Duration) (sbx.Sandbox, error)

func (s *Server) connectSandbox(w http.ResponseWriter, r *http.Request) {
	var body apiv1.ConnectRequest
	s.timedAction(w, r, &body, &body.Timeout, "timeout", false, 0, func(ctx context.Context, c sbx.Caller, ref string, d time.Duration) (sbx.Sandbox, error) {
		sb, err := s.mgr.Connect(ctx, c, ref, d)
		if err == nil && body.RotateAccessToken {
			return s.mgr.RotateToken(ctx, sb)
		}
		return sb, err
	})
}

func (s *Server) resumeSandbox(w http.ResponseWriter, r *http.Request) {
	var body apiv1.TimeoutRequest
	s.timedAction(w, r, &body, &body.Timeout, "timeout", false, 0, s.mgr.Resume)
}

func (s *Server) setSandboxTimeout(w http.ResponseWriter, r *http.Request) {
	var body apiv1.TimeoutRequest
	s.timedAction(w, r, &body, &body.Timeout, "timeout", true, 0, s.mgr.SetTimeout)
}

func (s *Server) refreshSandbox(w http.ResponseWriter, r *http.Request) {
	var body apiv1.RefreshRequest
	s.timedAction(w, r, &body, &body.Duration, "duration", false, maxRefresh, s.mgr.Refresh)
}

func (s *Server) pauseSandbox(w http.ResponseWriter, r *http.Request) {
	var body apiv1.PauseRequest
	if !s.decode(w, r, &body) {
		return
	}
	pause := s.mgr.Pause
	if body.Hibernate {
		pause = s.mgr.Hibernate
	}
	sb, err := pause(r.Context(), caller(r), r.PathValue("id"), sbx.PauseUser)
	s.answer(w, r, sb, err)
}

// setSandboxEgress replaces a sandbox's egress policy; the body is the
// policy, and its problems are named by its own fields (mode, allow[2]).
func (s *Server) setSandboxEgress(w http.ResponseWriter, r *http.Request) {
	var body apiv1.Egress
	if !s.decode(w, r, &body) {
		return
	}
	sb, err := s.mgr.SetEgress(r.Context(), caller(r), r.PathValue("id"), *egressOf(&body))
	s.answer(w, r, sb, err)
}

// timedAction decodes body, whose one field (named field, decoded into v)
// is a count of seconds, at most limit when limit is not zero, and runs act.
func (s *Server) timedAction(w http.ResponseWriter, r *http.Request, body any, v **int64, field string, required bool, limit int64, act timed) {
	err := s.decodeBody(w, r, body)
	var d time.Duration
	if err == nil {
		d, err = seconds(field, *v, required, limit)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	sb, err := act(r.Context(), caller(r), r.PathValue("id"), d)
	s.answer(w, r, sb, err)
}

// decode reads a strict, optional JSON body into v; on failure it has answered.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := s.decodeBody(w, r, v); err != nil {
		s.error(w, r, err)
		return false
	}
	return true
}

func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := readJSON(w, r)
	if err != nil {
		return err
	}
	return decodeStrict(data, v)
}

// answer renders the outcome of an action on a sandbox.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, sb sbx.Sandbox, err error) {
	if err != nil {
		s.error(w, r, err)
		return
	}
	s.renderSandbox(w, r, http.StatusOK, sb)
}

// seconds turns an optional count of seconds into a duration; zero when absent.
func seconds(field string, v *int64, required bool, limit int64) (time.Duration, error) {
	switch {
	case v == nil && required:
		return 0, sbx.Invalid(field, "%s is required (seconds)", field)
	case v == nil:
		return 0, nil
	case limit > 0 && *v > limit:
		return 0, sbx.Invalid(field, "%s must be at most %d seconds", field, limit)
	case *v < 1 || *v > 1<<31:
		return 0, sbx.Invalid(field, "%s must be a positive number of seconds", field)
	}
	return time.Duration(*v) * time.Second, nil
}
