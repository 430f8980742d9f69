package e2e

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/sbxdev/sbx/apiv1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The operator scrapes /metrics (the API listener, with the operator's
// key; --metrics-listen, with none) and sees the lifecycle's counters move
// through create → pause → resume → delete; other keys are refused.
func TestMetrics(t *testing.T) {
	metricsAddr := freeAddr(t)
	s := startServer(t, serverOpts{args: []string{"--metrics-listen", metricsAddr}})
	member, _ := s.memberKey("ada@example.com", "member")
	for _, c := range []struct {
		key, method string
		status      int
		detail      string
	}{
		{member, "GET", http.StatusForbidden, "it needs the operator's key"},
		{"", "GET", http.StatusUnauthorized, "API key"},
		{s.key, "POST", http.StatusMethodNotAllowed, "they take GET"},
	} {
		status, body := s.metrics(c.key, c.method)
		var e apiv1.Error
		if err := json.Unmarshal(body, &e); err != nil || status != c.status || !strings.Contains(e.Detail, c.detail) {
			t.Errorf("%s /metrics: %d %s; want %d naming %q", c.method, status, body, c.status, c.detail)
		}
	}

	before := s.scrape()
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "sbx_host_cpus", "sbx_host_sandboxes"} {
		if _, ok := before[name]; !ok {
			t.Errorf("the scrape has no %s", name)
		}
	}
	sb := s.create(nil)
	s.waitFor(sb.SandboxID, "running", state("running"))
	s.call("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/pause", nil, http.StatusOK, nil)
	s.call("POST", "/api/v1/sandboxes/"+sb.SandboxID+"/resume", map[string]any{}, http.StatusOK, nil)
	s.call("DELETE", "/api/v1/sandboxes/"+sb.SandboxID, nil, http.StatusOK, nil)
	after := s.scrape()

	for _, verb := range []string{"create", "pause", "resume", "delete"} {
		op := []string{"verb=" + verb, "provider=memory", "outcome=ok"}
		if d := sample(after, "sbx_lifecycle_operation_duration_seconds", op...) - sample(before, "sbx_lifecycle_operation_duration_seconds", op...); d != 1 {
			t.Errorf("sbx_lifecycle_operation_duration_seconds%v moved by %v, want 1", op, d)
		}
		call := []string{"provider=memory", "call=" + verb, "outcome=ok"}
		if d := sample(after, "sbx_provider_call_duration_seconds", call...) - sample(before, "sbx_provider_call_duration_seconds", call...); d != 1 {
			t.Errorf("sbx_provider_call_duration_seconds%v moved by %v, want 1", call, d)
		}
	}
	for route, code := range map[string]string{"POST /api/v1/sandboxes": "2xx", "POST /api/v1/sandboxes/{id}/pause": "2xx", "DELETE /api/v1/sandboxes/{id}": "2xx", "GET /metrics": ""} {
		labels := []string{"route=" + route}
		if code != "" {
			labels = append(labels, "code="+code)
		} else {
			labels = []string{"route=metrics", "code=4xx"} // the member's refusal above
		}
		if sample(after, "sbx_http_request_duration_seconds", labels...) < 1 {
			t.Errorf("no request %v in sbx_http_request_duration_seconds", labels)
		}
	}
	if n := sample(after, "sbx_sandboxes", "provider=memory", "state=killed"); n != 1 {
		t.Errorf("sbx_sandboxes{provider=memory,state=killed} = %v, want 1", n)
	}

	// The separate listener serves the same metrics without a key.
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	open := parseMetrics(t, resp.Body)
	if resp.StatusCode != http.StatusOK || sample(open, "sbx_lifecycle_operation_duration_seconds", "verb=delete", "outcome=ok") < 1 {
		t.Errorf("--metrics-listen: %d, %d families", resp.StatusCode, len(open))
	}
}

// scrape reads /metrics with the operator's key and parses it.
func (s *server) scrape() map[string]*dto.MetricFamily {
	s.t.Helper()
	status, body := s.metrics(s.key, "GET")
	if status != http.StatusOK {
		s.t.Fatalf("GET /metrics: %d %s", status, body)
	}
	return parseMetrics(s.t, bytes.NewReader(body))
}

// metrics asks for /metrics with key ("": none). Not through s.http: the
// metrics are the operator's, no operation of the tenants' API, which the
// OpenAPI document (and its validator) describes.
func (s *server) metrics(key, method string) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+"/metrics", nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, body
}

func parseMetrics(t *testing.T, r io.Reader) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		t.Fatalf("the metrics are not Prometheus's text format: %v", err)
	}
	return families
}

// sample sums the samples of family name whose labels include labels
// ("k=v" each): counters' and gauges' values, histograms' counts.
func sample(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	var sum float64
	f := families[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// A create's trace, exported over OTLP/HTTP to a receiver of the test's,
// has the API's span (under the client's traceparent), the lifecycle's,
// the background create's and the provider's, each the child of the one
// before.
func TestTraces(t *testing.T) {
	receiver := &otlpReceiver{}
	srv := httptest.NewServer(receiver)
	defer srv.Close()
	s := startServer(t, serverOpts{env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_SERVICE_NAME=sbx-e2e"}})

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", s.url+"/api/v1/sandboxes", strings.NewReader(`{"templateID":"base"}`))
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	want := []string{"POST /api/v1/sandboxes", "lifecycle.create", "lifecycle.create.compute", "provider.create"}
	spans := receiver.await(t, s, func(spans map[string]*tracepb.Span) bool {
		for _, name := range want {
			if spans[name] == nil {
				return false
			}
		}
		return true
	})
	api, lc, compute, provider := spans[want[0]], spans[want[1]], spans[want[2]], spans[want[3]]
	if hex.EncodeToString(api.TraceId) != traceID || hex.EncodeToString(api.ParentSpanId) != parentID {
		t.Errorf("the API's span is not under the client's traceparent: trace %x, parent %x", api.TraceId, api.ParentSpanId)
	}
	for _, pair := range [][2]*tracepb.Span{{api, lc}, {lc, compute}, {compute, provider}} {
		parent, child := pair[0], pair[1]
		if !bytes.Equal(child.ParentSpanId, parent.SpanId) || !bytes.Equal(child.TraceId, parent.TraceId) {
			t.Errorf("span %s is not the child of %s", child.Name, parent.Name)
		}
	}
	if receiver.service() != "sbx-e2e" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", receiver.service())
	}
}

// otlpReceiver is an OTLP/HTTP trace receiver: it keeps the spans of
// every export, by name.
type otlpReceiver struct {
	mu    sync.Mutex
	spans map[string]*tracepb.Span
	svc   string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var export coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &export)
	}
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		http.Error(w, "not an OTLP/HTTP protobuf export of traces", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	if o.spans == nil {
		o.spans = map[string]*tracepb.Span{}
	}
	for _, rs := range export.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				o.svc = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				o.spans[sp.Name] = sp
			}
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (o *otlpReceiver) service() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.svc
}

// await waits until done holds of the spans received, with a hang guard.
func (o *otlpReceiver) await(t *testing.T, s *server, done func(map[string]*tracepb.Span) bool) map[string]*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		o.mu.Lock()
		spans := map[string]*tracepb.Span{}
		for k, v := range o.spans {
			spans[k] = v
		}
		o.mu.Unlock()
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("the spans never came; received %v\n%s", names(spans), s.out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func names(spans map[string]*tracepb.Span) []string {
	var out []string
	for n := range spans {
		out = append(out, n)
	}
	return out
}
