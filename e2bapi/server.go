// Package e2bapi serves E2B's control-plane API (the routes the E2B SDKs
// call: npm e2b 2.x, PyPI e2b) over sbx's application layer, so that an
// unmodified E2B program runs on sbx once E2B_API_URL points at
// <serve>/e2b and E2B_API_KEY holds an sbx API key. It is a surface like
// httpapi: it authenticates the caller (X-API-KEY, through tenancy),
// translates E2B's requests into calls of lifecycle.Manager and its answers
// and errors ({"code": status, "message"}) back; it decides no rule. It is
// the one place E2B's field names are accepted. E2B fields sbx cannot
// honour are refused with a 400 naming them, never dropped.
//
// The sandboxes' envd traffic (commands, files, PTYs) and the code
// interpreter's are not here: httpapi routes them to the agent, which
// speaks envd's protocol (agent/envd*.go, agent/e2bcode.go).
package e2bapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
)

// Prefix is where serve mounts the API: E2B_API_URL is <serve>/e2b.
const Prefix = "/e2b"

// EnvdVersion is the envd version sbx's agent answers for: the E2B SDKs
// turn on their code paths by it (0.6.4 and later enable all of npm e2b
// 2.x's), and sbx's agent serves what those paths call.
const EnvdVersion = "0.6.13"

// Authenticator finds who an API key acts for (tenancy.Service does).
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (sbx.Caller, error)
}

// Config is what the API says about where sandboxes are reached.
type Config struct {
	// Domain is the sandboxes' domain as E2B's SDK joins it to a port and a
	// sandbox ID (https://49983-<id>.<Domain>): serve's domain, with its
	// listener's port when that is not the scheme's.
	Domain string
}

// Server serves E2B's control-plane API.
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
		{"POST /v2/sandboxes", s.create},
		{"POST /sandboxes", s.create}, // v1: the Python SDK's
		{"GET /v2/sandboxes", s.list},
		{"GET /sandboxes", s.list},
		{"GET /sandboxes/{id}", s.get},
		{"DELETE /sandboxes/{id}", s.kill},
		{"POST /sandboxes/{id}/timeout", s.setTimeout},
		{"POST /sandboxes/{id}/refreshes", s.refresh},
		{"POST /sandboxes/{id}/pause", s.pause},
		{"POST /v2/sandboxes/{id}/connect", s.connect},
		{"POST /sandboxes/{id}/connect", s.connect}, // v1: the Python SDK's
		{"POST /sandboxes/{id}/resume", s.connect},  // before connect
		{"GET /sandboxes/{id}/metrics", s.metrics},
		{"GET /sandboxes/{id}/logs", s.logs},
		{"PUT /sandboxes/{id}/network", s.network},
		{"POST /sandboxes/{id}/fork", s.fork},
		{"POST /sandboxes/{id}/snapshots", s.snapshot},
		{"GET /snapshots", s.snapshots},
		{"DELETE /templates/{id}", s.deleteSnapshot},
	} {
		s.mux.Handle(r.pattern, s.handle(r.fn))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.error(w, r, sbx.Errorf(sbx.ENotFound, "sbx serves no E2B route %s %s", r.Method, r.URL.Path))
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

// handler answers a request for the caller; an error is rendered as E2B's.
type handler func(w http.ResponseWriter, r *http.Request, c sbx.Caller) error

// handle authenticates a request by its X-API-KEY and runs fn.
func (s *Server) handle(fn handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-API-Key")
		if key == "" {
			s.error(w, r, sbx.Errorf(sbx.EUnauthorized, "an sbx API key is required in X-API-KEY (E2B_API_KEY)"))
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

// apiError is E2B's error body; the SDKs read code (the HTTP status) and
// message.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (s *Server) error(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return
	}
	code := sbx.ErrorCode(err)
	if code == sbx.EInternal {
		s.log.Error("E2B request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	status := code.HTTPStatus()
	writeJSON(w, status, apiError{Code: status, Message: sbx.ErrorMessage(err)}) // an invalid body's message names every field
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// maxBody bounds a request's body.
const maxBody = 1 << 20

// decode reads a JSON body into v; an empty body leaves v as it is. E2B's
// bodies are decoded leniently, as E2B's API does (its SDKs send fields
// sbx has no use for), but every field sbx cannot honour is refused by the
// handler that reads it.
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
	if err := json.Unmarshal(data, v); err != nil {
		return sbx.Errorf(sbx.EInvalid, "the body is not the JSON this route takes: %v", err)
	}
	return nil
}
