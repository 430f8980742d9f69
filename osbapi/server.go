// Package osbapi serves OpenSandbox's lifecycle API (the routes its SDKs
// call: npm @alibaba-group/opensandbox, PyPI opensandbox) over sbx's
// application layer, so that an unmodified OpenSandbox program runs on sbx
// once its connection's domain is <serve>/opensandbox and its API key is an
// sbx API key. It is a surface like httpapi and e2bapi: it authenticates the
// caller (OPEN-SANDBOX-API-KEY, through tenancy), translates OpenSandbox's
// requests into calls of lifecycle.Manager and its answers and errors
// ({"code", "message"}) back; it decides no rule. It is the one place
// OpenSandbox's field names are accepted. Fields sbx cannot honour are
// refused with a 400 naming them, never dropped.
//
// The sandboxes' execd traffic (commands, files) is not here: a sandbox's
// endpoint for execd's port is serve's ExecdPrefix, which httpapi routes to
// the agent, which speaks execd's API (agent/execd*.go).
package osbapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/strictjson"
	"github.com/sbxdev/sbx/lifecycle"
)

// Prefix is where serve mounts the API: an SDK's domain is <serve>/opensandbox
// (the SDK appends /v1).
const Prefix = "/opensandbox"

// ExecdPrefix is where serve reaches sandboxes' execd:
// ExecdPrefix + {sandboxID} + execd's path.
const ExecdPrefix = Prefix + "/execd/"

// ExecdPort is the port execd listens on in an OpenSandbox sandbox, whose
// endpoint the SDKs ask for.
const ExecdPort = 44772

// The headers of OpenSandbox's credentials: the API key of the lifecycle
// API, and execd's access token (an sbx sandbox's access token).
const (
	APIKeyHeader     = "OPEN-SANDBOX-API-KEY"
	ExecdTokenHeader = "X-EXECD-ACCESS-TOKEN"
)

// Authenticator finds who an API key acts for (tenancy.Service does).
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (sbx.Caller, error)
}

// Config is what the API says about where sandboxes are reached.
type Config struct {
	// Host is serve's public host[:port], as a sandbox's endpoints begin
	// (OpenSandbox's endpoints carry no scheme: the SDK adds its own).
	Host string
}

// Server serves OpenSandbox's lifecycle API.
type Server struct {
	mgr  *lifecycle.Manager
	auth Authenticator
	cfg  Config
	log  *slog.Logger
	mux  *http.ServeMux
}

// New returns the API; serve mounts it at Prefix.
func New(mgr *lifecycle.Manager, auth Authenticator, cfg Config, log *slog.Logger) *Server {
	s := &Server{mgr: mgr, auth: auth, cfg: cfg, log: log, mux: http.NewServeMux()}
	for _, r := range []struct {
		pattern string
		fn      handler
	}{
		{"POST /v1/sandboxes", s.create},
		{"GET /v1/sandboxes", s.list},
		{"GET /v1/sandboxes/{id}", s.get},
		{"DELETE /v1/sandboxes/{id}", s.kill},
		{"POST /v1/sandboxes/{id}/pause", s.pause},
		{"POST /v1/sandboxes/{id}/resume", s.resume},
		{"POST /v1/sandboxes/{id}/renew-expiration", s.renew},
		{"GET /v1/sandboxes/{id}/endpoints/{port}", s.endpoint},
	} {
		s.mux.Handle(r.pattern, s.handle(r.fn))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.error(w, r, sbx.Errorf(sbx.ENotFound, "sbx serves no OpenSandbox route %s %s", r.Method, strictjson.Short(r.URL.Path)))
	})
	return s
}

// ServeHTTP serves a request whose path is below Prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r2 := *r
	u := *r.URL
	u.Path, u.RawPath = strings.TrimPrefix(r.URL.Path, Prefix), ""
	r2.URL = &u
	s.mux.ServeHTTP(w, &r2)
}

// Owns reports whether a request's path is the API's.
func Owns(path string) bool { return path == Prefix || strings.HasPrefix(path, Prefix+"/") }

// handler answers a request for the caller; an error is rendered as
// OpenSandbox's.
type handler func(w http.ResponseWriter, r *http.Request, c sbx.Caller) error

// handle authenticates a request by its OPEN-SANDBOX-API-KEY and runs fn.
func (s *Server) handle(fn handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(APIKeyHeader)
		if key == "" {
			s.error(w, r, sbx.Errorf(sbx.EUnauthorized, "an sbx API key is required in %s (OPEN_SANDBOX_API_KEY)", APIKeyHeader))
			return
		}
		c, err := s.auth.Authenticate(r.Context(), key)
		if err == nil {
			err = fn(w, r, c)
		}
		if err != nil {
			s.error(w, r, err)
		}
	})
}

// apiError is OpenSandbox's ErrorResponse: a machine-readable code and a
// message.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorCode is the code of OpenSandbox's error body for an sbx error code:
// SBX::<CODE>, as OpenSandbox's servers prefix theirs (SANDBOX::…, DOCKER::…).
func ErrorCode(c sbx.Code) string { return "SBX::" + strings.ToUpper(string(c)) }

// Error answers err as OpenSandbox's error (httpapi's execd routing does).
func (s *Server) Error(w http.ResponseWriter, r *http.Request, err error) { s.error(w, r, err) }

func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return
	}
	code := sbx.ErrorCode(err)
	if code == sbx.EInternal {
		s.log.Error("OpenSandbox request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, code.HTTPStatus(), apiError{Code: ErrorCode(code), Message: sbx.ErrorMessage(err)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// maxBody bounds a request's body.
const maxBody = 1 << 20

// decode reads a JSON body into v strictly (package strictjson: every
// unknown field is named); an empty body leaves v as it is.
func decode(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	switch {
	case err != nil:
		return sbx.Errorf(sbx.EInvalid, "reading the body: %v", err)
	case len(data) > maxBody:
		return sbx.Errorf(sbx.ETooLarge, "the body is over %d bytes", maxBody)
	case len(strings.TrimSpace(string(data))) == 0:
		return nil
	}
	if err := strictjson.Decode(data, v); err != nil {
		var se *strictjson.Error
		if !errors.As(err, &se) {
			return sbx.Errorf(sbx.EInvalid, "the body is not the JSON this route takes: %v", err)
		}
		var p sbx.Problems
		for _, pr := range se.Problems {
			p.Add(pr.Field, "%s", pr.Message)
		}
		return p.Err()
	}
	return nil
}
