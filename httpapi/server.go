// Package httpapi is sbx's REST API: routing, authentication, strict request
// decoding, the error envelope and rendering. Handlers stay thin: parse,
// authorize through package authz's policy, call the lifecycle manager,
// render.
package httpapi

import (
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/sbxdev/sbx/preview"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/billing"
	"github.com/sbxdev/sbx/e2bapi"
	"github.com/sbxdev/sbx/events"
	"github.com/sbxdev/sbx/internal/strictjson"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/mcpserver"
	"github.com/sbxdev/sbx/observability"
	"github.com/sbxdev/sbx/osbapi"
	"github.com/sbxdev/sbx/secrets"
	"github.com/sbxdev/sbx/sessions"
	"github.com/sbxdev/sbx/sshauth"
	"github.com/sbxdev/sbx/telemetry"
	"github.com/sbxdev/sbx/tenancy"
	"github.com/sbxdev/sbx/ui"
	"github.com/sbxdev/sbx/webhooks"
)

// Config is what the API needs to know about where it is served.
type Config struct {
	PublicURL    string               // how clients reach this server, e.g. http://127.0.0.1:7070
	Domain       string               // preview and runtime domain, e.g. sbx.localhost
	HostCPUs     int                  // for quota checks; 0: this host's
	HostMemoryMB int64                // for quota checks; 0: unknown
	Engines      []apiv1.EngineStatus // isolation engines found at start
	// KYCWebhookSecret signs the KYC webhook's requests; empty: the webhook is off (503).
	KYCWebhookSecret string
	// SSH is where clients reach the SSH gateway; zero: there is none (503).
	SSH SSHEndpoint
	// UI serves the web console at / and under ui.Prefix; nil: there is
	// none, and / is a 404 like any path no route takes.
	UI http.Handler
	// NoVNCDir holds noVNC's files (Debian's novnc: /usr/share/novnc), which
	// the desktop viewer loads; empty: sandboxes' desktops have no viewer.
	NoVNCDir string
	// Metrics serves the Prometheus metrics at /metrics to the operator's
	// key (metrics.go); nil: /metrics is a 404 like any path no route takes.
	Metrics http.Handler
	// WebhookPrivate lets webhook URLs name private addresses (serve
	// --webhook-private).
	WebhookPrivate bool
}

// SSHEndpoint is where SSH clients reach serve's SSH gateway, and its host
// key as a known_hosts line.
type SSHEndpoint struct {
	Host       string
	Port       int
	KnownHosts string
}

// Server serves the API.
type Server struct {
	mgr      *lifecycle.Manager  // sandboxes
	runtimes *lifecycle.Runtimes // a project's runtimes, over mgr
	store    Store
	policy   authz.Policy
	cfg      Config
	clock    sbx.Clock
	log      *slog.Logger
	mux      *http.ServeMux

	tenancy *tenancy.Service // orgs, workspaces, projects, members and keys

	secrets       *secrets.Service      // an org's secrets
	events        *events.Service       // an org's event log
	webhooks      *webhooks.Service     // an org's webhooks
	sshauth       *sshauth.Service      // SSH keys and tokens
	sessions      *sessions.Service     // a workspace's agent sessions
	billing       billing.Service       // an org's wallet, prices and top-ups
	observability observability.Service // the observability summary and usage
	previews      *preview.Service      // preview traffic and links
	e2b           *e2bapi.Server        // E2B's control-plane API, under e2bapi.Prefix
	osb           *osbapi.Server        // OpenSandbox's lifecycle API, under osbapi.Prefix
	mcp           http.Handler          // the MCP endpoint's tools, over this API (mcp.go)
}

// New returns the API handler.
func New(mgr *lifecycle.Manager, store Store, cfg Config, clock sbx.Clock, log *slog.Logger) *Server {
	if cfg.HostCPUs == 0 {
		cfg.HostCPUs = runtime.NumCPU()
	}
	s := &Server{mgr: mgr, store: store, policy: authz.Policy{Store: store}, cfg: cfg, clock: clock, log: log, mux: http.NewServeMux()}
	s.runtimes = lifecycle.NewRuntimes(mgr, store)
	s.tenancy = tenancy.New(store, s.policy, clock, lifecycle.NewMembers(mgr, store))
	s.secrets = secrets.New(store, s.policy, clock)
	s.events = events.New(store)
	s.webhooks = webhooks.New(store, clock, cfg.WebhookPrivate)
	s.sessions = sessions.New(store, s.policy, clock)
	s.previews = preview.New(store, mgr, clock)
	s.sshauth = sshauth.New(store, s.policy, mgr, clock)
	s.e2b = e2bapi.New(mgr, s.tenancy, e2bapi.Config{Domain: e2bDomain(cfg)}, log)
	s.osb = osbapi.New(mgr, s.tenancy, osbapi.Config{Host: osbHost(cfg)}, log)
	s.billing = billing.Service{Store: store, Clock: clock}
	s.observability = observability.Service{Store: store, Sandboxes: mgr, Policy: s.policy,
		Host: observability.Host{CPUs: cfg.HostCPUs, MemoryMB: cfg.HostMemoryMB}, Clock: clock, Log: log}
	if mgr != nil { // the route table's tests build a Server without one
		l := mgr.Limits()
		s.observability.Limits = observability.Limits{MaxTimeout: mgr.Config().MaxTimeout,
			MaxCPU: l.MaxCPU, MaxMemoryMB: l.MaxMemoryMB, MaxDiskMB: l.MaxDiskMB, DefaultDiskMB: l.DefaultDiskMB}
	}
	s.mcp = mcpserver.HTTPHandler(s, cfg.PublicURL, apiKey)
	ops := operations()
	for _, r := range s.routes() {
		h := s.checkInput(ops[r.Method+" "+r.Pattern], r.handler)
		if r.auth {
			h = s.authenticate(h)
		}
		s.mux.Handle(r.Method+" "+r.Pattern, h)
	}
	s.mux.HandleFunc("/", s.noRoute)
	return s
}

// noRoute answers a request no route takes: a 405 with Allow when the path
// has routes for other methods, else a 404.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	probe := *r // a shallow copy: Handler only reads its method, host and path
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe.Method = m
		if _, pattern := s.mux.Handler(&probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		s.error(w, r, sbx.Errorf(sbx.ENotFound, "no route for %s %s", r.Method, strictjson.Short(r.URL.Path)))
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	s.error(w, r, sbx.Errorf(sbx.EMethodNotAllowed, "%s %s is not a method of this route; it takes %s", r.Method, strictjson.Short(r.URL.Path), strings.Join(allow, ", ")))
}

// ServeHTTP logs each request, dispatches it, and records it for the
// metrics and traces (metrics.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ctx, span := telemetry.StartRequest(r)
	if ctx != r.Context() { // traces are on
		r = r.WithContext(ctx)
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	t := s.dispatch(rec, r)
	record(span, r, t, rec, time.Since(start))
	s.log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", time.Since(start))
}

// dispatch hands a request to what serves it, and answers what kind of
// traffic it was.
func (s *Server) dispatch(rec *statusRecorder, r *http.Request) traffic {
	port, id, host := s.sandboxHost(r)
	runtime := host && port == apiv1.AgentPort
	e2bPort, e2bID, e2b := e2bTraffic(r, host, port, id)
	switch {
	case e2b:
		if s.uncleanPath(rec, r, true) {
			return trafficUnclean
		}
		s.e2bProxy(rec, r, e2bPort, e2bID)
		return trafficE2BProxy
	case host && !runtime:
		s.previewProxy(rec, r, port, id, r.URL.Path, false)
		return trafficPreview
	case s.uncleanPath(rec, r, runtime):
		return trafficUnclean
	case runtime:
		s.runtimeProxy(rec, r, id)
		return trafficRuntime
	case isPortsPath(r.URL.Path):
		s.portsProxy(rec, r)
		return trafficPorts
	case strings.HasPrefix(r.URL.Path, viewerPrefix):
		s.viewerAssets(rec, r)
		return trafficViewer
	case e2bapi.Owns(r.URL.Path):
		s.e2b.ServeHTTP(rec, r)
		return trafficE2BAPI
	case isExecdPath(r.URL.Path):
		s.execdProxy(rec, r)
		return trafficExecd
	case osbapi.Owns(r.URL.Path):
		s.osb.ServeHTTP(rec, r)
		return trafficOSBAPI
	case r.URL.Path == metricsPath && s.cfg.Metrics != nil:
		s.authenticate(http.HandlerFunc(s.metrics)).ServeHTTP(rec, r)
		return trafficMetrics
	case s.cfg.UI != nil && ui.Owns(r.URL.Path):
		s.cfg.UI.ServeHTTP(rec, r)
		return trafficUI
	default:
		s.mux.ServeHTTP(rec, r)
		return trafficAPI
	}
}

// statusRecorder keeps a response's status and counts its body's bytes.
type statusRecorder struct {
	http.ResponseWriter
	status  int
	written int64
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	n, err := r.ResponseWriter.Write(b)
	r.written += int64(n)
	return n, err
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
