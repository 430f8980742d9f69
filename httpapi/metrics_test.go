package httpapi

import (
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/sbxdev/sbx/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// proxied reads sbx_proxy_requests_total and sbx_proxy_response_bytes_total of kind.
func proxied(t *testing.T, kind string) (requests, bytes float64) {
	t.Helper()
	rec := httptest.NewRecorder()
	telemetry.Handler(nil, slog.New(slog.DiscardHandler)).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) float64 {
		for _, m := range families[name].GetMetric() {
			if m.GetLabel()[0].GetValue() == kind {
				return m.GetCounter().GetValue()
			}
		}
		return 0
	}
	return read("sbx_proxy_requests_total"), read("sbx_proxy_response_bytes_total")
}

// A request of an agent's route is proxied traffic of kind agent, with the
// bytes of its answer; the agent's routes are those of agentRoutes only.
func TestRecordNamesTrafficByRoute(t *testing.T) {
	requests, bytes := proxied(t, "agent")
	r := httptest.NewRequest("POST", "/api/v1/sandboxes/x/commands", nil)
	r.Pattern = "POST /api/v1/sandboxes/{id}/commands"
	record(trace.SpanFromContext(r.Context()), r, trafficAPI, &statusRecorder{status: 200, written: 42}, time.Millisecond)
	if n, b := proxied(t, "agent"); n != requests+1 || b != bytes+42 {
		t.Errorf("an agent request moved the agent's traffic by %v requests, %v bytes; want 1, 42", n-requests, b-bytes)
	}
	if !agentPatterns["GET /api/v1/sandboxes/{id}/files"] || agentPatterns["GET /api/v1/sandboxes/{id}"] {
		t.Error("agentPatterns is not the agent's routes")
	}
}
