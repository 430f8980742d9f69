package httpapi

import (
	"net/http"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// metricsPath is where the operator's key scrapes the Prometheus metrics
// (Config.Metrics). It is outside /api/v1 and no route of the API: the
// route table and its OpenAPI document are the tenants' API.
const metricsPath = "/metrics"

// metrics serves the metrics to the operator's key, and refuses other keys
// with a 403 naming what the operator's key is.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		s.error(w, r, sbx.Errorf(sbx.EMethodNotAllowed, "%s %s is not a method of the metrics; they take GET", r.Method, metricsPath))
		return
	}
	if !s.operator(w, r) {
		return
	}
	s.cfg.Metrics.ServeHTTP(w, r)
}

// traffic is the kind of a request the API listener serves: a route of
// the API's table, or another server's or a proxy's. A proxy's kind names
// its requests in the metrics (proxied: its bytes too); the rest name
// theirs by their route's pattern when they have one.
type traffic string

const (
	trafficAPI      traffic = "api"
	trafficUnclean  traffic = "unclean_path"
	trafficViewer   traffic = "desktop_viewer"
	trafficE2BAPI   traffic = "e2b_api"
	trafficOSBAPI   traffic = "opensandbox_api"
	trafficMetrics  traffic = "metrics"
	trafficUI       traffic = "ui"
	trafficE2BProxy traffic = "e2b"
	trafficPreview  traffic = "preview"
	trafficRuntime  traffic = "runtime"
	trafficPorts    traffic = "ports"
	trafficExecd    traffic = "execd"
	trafficAgent    traffic = "agent" // the agent's routes of the API's table (agentRoutes)
)

// agentPatterns are the patterns of the agent's routes, whose requests are
// proxied to sandboxes too.
var agentPatterns = func() map[string]bool {
	set := map[string]bool{}
	for _, a := range agentRoutes {
		set[a.method+" /api/v1/sandboxes/{id}"+a.pattern] = true
	}
	return set
}()

// proxied reports whether t is traffic proxied to sandboxes.
func (t traffic) proxied() bool {
	switch t {
	case trafficE2BProxy, trafficPreview, trafficRuntime, trafficPorts, trafficExecd, trafficAgent:
		return true
	}
	return false
}

// record ends a request's span and records its metrics: its route is the
// pattern the API's table (or E2B's or OpenSandbox's) matched, else its
// traffic's kind; never its raw path, so the labels stay few.
func record(span trace.Span, r *http.Request, t traffic, rec *statusRecorder, took time.Duration) {
	route := string(t)
	switch {
	case r.Pattern == "/": // no route took it
		route = "no_route"
	case r.Pattern != "":
		route = r.Pattern
	}
	if t == trafficAPI && agentPatterns[r.Pattern] {
		t = trafficAgent
	}
	if t.proxied() {
		telemetry.Proxied(string(t), rec.written)
	}
	telemetry.FinishRequest(span, r.Method, route, rec.status, took)
}
