package httpapi

import (
	"net/http"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// maxRefresh bounds a refresh's duration.
const maxRefresh = 3600

func (s *Server) connectSandbox(w http.ResponseWriter, r *http.Request) {
	var body apiv1.TimeoutRequest
	if !s.decode(w, r, &body) {
		return
	}
	timeout, err := seconds("timeout", body.Timeout, false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	sb, err := s.mgr.Connect(r.Context(), caller(r), r.PathValue("id"), timeout)
	s.answer(w, r, sb, err)
}

func (s *Server) pauseSandbox(w http.ResponseWriter, r *http.Request) {
	var body struct{}
	if !s.decode(w, r, &body) {
		return
	}
	sb, err := s.mgr.Pause(r.Context(), caller(r), r.PathValue("id"), sbx.PauseUser)
	s.answer(w, r, sb, err)
}

func (s *Server) resumeSandbox(w http.ResponseWriter, r *http.Request) {
	var body apiv1.TimeoutRequest
	if !s.decode(w, r, &body) {
		return
	}
	timeout, err := seconds("timeout", body.Timeout, false)
	if err != nil {
		s.error(w, r, err)
		return
	}
	sb, err := s.mgr.Resume(r.Context(), caller(r), r.PathValue("id"), timeout)
	s.answer(w, r, sb, err)
}

func (s *Server) refreshSandbox(w http.ResponseWriter, r *http.Request) {
	var body apiv1.RefreshRequest
	if !s.decode(w, r, &body) {
		return
	}
	d, err := seconds("duration", body.Duration, false)
	if err == nil && d > maxRefresh*time.Second {
		err = sbx.Invalid("duration", "duration must be at most %d seconds", maxRefresh)
	}
	if err != nil {
		s.error(w, r, err)
		return
	}
	sb, err := s.mgr.Refresh(r.Context(), caller(r), r.PathValue("id"), d)
	s.answer(w, r, sb, err)
}

func (s *Server) setSandboxTimeout(w http.ResponseWriter, r *http.Request) {
	var body apiv1.TimeoutRequest
	if !s.decode(w, r, &body) {
		return
	}
	timeout, err := seconds("timeout", body.Timeout, true)
	if err != nil {
		s.error(w, r, err)
		return
	}
	sb, err := s.mgr.SetTimeout(r.Context(), caller(r), r.PathValue("id"), timeout)
	s.answer(w, r, sb, err)
}

// decode reads a strict, optional JSON body into v; on failure it has answered.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := readBody(w, r)
	if err == nil {
		err = decodeStrict(data, v)
	}
	if err != nil {
		s.error(w, r, err)
		return false
	}
	return true
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
func seconds(field string, v *int64, required bool) (time.Duration, error) {
	switch {
	case v == nil && required:
		return 0, sbx.Invalid(field, "%s is required (seconds)", field)
	case v == nil:
		return 0, nil
	case *v < 1 || *v > 1<<31:
		return 0, sbx.Invalid(field, "%s must be a positive number of seconds", field)
	}
	return time.Duration(*v) * time.Second, nil
}
