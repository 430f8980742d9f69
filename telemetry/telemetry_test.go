package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/sbxdev/sbx"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// scrape serves h once and parses its answer with Prometheus's text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: %d %s", rec.Code, rec.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return families
}

// value is the value of the sample of family name whose labels include
// labels ("k=v" each): a counter's or gauge's value, a histogram's count;
// ok is false when there is none.
func value(families map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := families[name]
	if f == nil {
		return 0, false
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
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

type fakeLedger struct {
	counts Counts
	err    error
}

func (f fakeLedger) Counts(context.Context) (Counts, error) { return f.counts, f.err }

type fakeHost struct{}

func (fakeHost) HostUse(context.Context) (sbx.PlanUse, error) {
	return sbx.PlanUse{Sandboxes: 3, MilliCPU: 2500, MemoryMB: 1024}, nil
}
func (fakeHost) Disk(context.Context) (sbx.Disk, bool, error) {
	return sbx.Disk{Total: 100, Free: 60, Committed: 20, Reserve: 10}, true, nil
}

// The handler serves what the layers recorded, the Go runtime's metrics,
// and what the census reads at the scrape, in the text format.
func TestHandlerServesRecordedAndCensus(t *testing.T) {
	Operation("pause", "memory", nil, 20*time.Millisecond)
	Operation("pause", "memory", errors.New("no"), time.Millisecond)
	Settled("sandbox", 2_500_000, nil)
	Reaped("kill_expired", nil)
	Reconciled("adopted")
	Request("GET /api/v1/sandboxes/{id}", 404, time.Millisecond)
	Proxied("preview", 1234)
	SSHChannel("x11") // a client's name: counted as other
	census := &Census{
		Ledger: fakeLedger{counts: Counts{
			Sandboxes: []SandboxCount{{"memory", sbx.StateRunning, 2}},
			Pools:     []PoolSize{{Template: "base", MinReady: 1, MaxReady: 3, Members: map[sbx.State]int{sbx.StateRunning: 1}}},
			Builds:    map[sbx.BuildState]int{sbx.BuildReady: 4},
		}},
		Host: fakeHost{}, CPUs: 8, MemoryBytes: 1 << 30,
		Addresses: func() (int, int, bool) { return 5, 16384, true },
	}
	f := scrape(t, Handler(census, slog.New(slog.DiscardHandler)))
	for _, c := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"sbx_lifecycle_operation_duration_seconds", []string{"verb=pause", "provider=memory", "outcome=ok"}, 1},
		{"sbx_lifecycle_operation_duration_seconds", []string{"verb=pause", "outcome=error"}, 1},
		{"sbx_meter_settlements_total", []string{"kind=sandbox", "outcome=ok"}, 1},
		{"sbx_credits_billed_total", []string{"kind=sandbox"}, 2.5},
		{"sbx_reaper_actions_total", []string{"action=kill_expired"}, 1},
		{"sbx_reconcile_actions_total", []string{"action=adopted"}, 1},
		{"sbx_http_request_duration_seconds", []string{"route=GET /api/v1/sandboxes/{id}", "code=4xx"}, 1},
		{"sbx_proxy_response_bytes_total", []string{"kind=preview"}, 1234},
		{"sbx_ssh_channels_total", []string{"type=other"}, 1},
		{"sbx_sandboxes", []string{"provider=memory", "state=running"}, 2},
		{"sbx_pool_members", []string{"template=base", "state=running"}, 1},
		{"sbx_pool_min_ready", []string{"template=base"}, 1},
		{"sbx_template_builds", []string{"state=ready"}, 4},
		{"sbx_host_cpus", nil, 8},
		{"sbx_host_sandbox_vcpus", nil, 2.5},
		{"sbx_host_sandbox_memory_bytes", nil, 1 << 30},
		{"sbx_host_disk_bytes", []string{"measure=committed"}, 20},
		{"sbx_host_addresses", []string{"state=free"}, 16379},
		{"go_goroutines", nil, 1},
	} {
		if v, ok := value(f, c.name, c.labels...); !ok || v < c.min {
			t.Errorf("%s%v = %v (present %v), want at least %v", c.name, c.labels, v, ok, c.min)
		}
	}
}

// A census whose ledger fails leaves its metrics out; the scrape goes on.
func TestCensusFailureLeavesItsMetricsOut(t *testing.T) {
	census := &Census{Ledger: fakeLedger{err: errors.New("database is down")}, CPUs: 2}
	f := scrape(t, Handler(census, slog.New(slog.DiscardHandler)))
	if _, ok := f["sbx_sandboxes"]; ok {
		t.Error("sbx_sandboxes served from a failed count")
	}
	if v, ok := value(f, "sbx_host_cpus"); !ok || v != 2 {
		t.Errorf("sbx_host_cpus = %v %v", v, ok)
	}
}

func TestTracesOn(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		problem string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, problem: `OTEL_TRACES_EXPORTER="zipkin"`},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, problem: `OTEL_EXPORTER_OTLP_PROTOCOL="grpc"`},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, on: true},
	} {
		on, err := TracesOn(func(k string) string { return c.env[k] })
		if on != c.on || (c.problem == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.problem)) {
			t.Errorf("%v: on %v, err %v; want on %v, a problem naming %q", c.env, on, err, c.on, c.problem)
		}
	}
}

// Call's span is a child of the lifecycle's, which Detach carries into
// background work without the request's cancellation.
func TestSpansNestAcrossDetach(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	req, cancel := context.WithCancel(context.Background())
	ctx, op := Span(req, "lifecycle.create")
	bg := Detach(ctx)
	cancel()
	if bg.Err() != nil {
		t.Fatal("Detach kept the request's cancellation")
	}
	_, err := Call(bg, "memory", "create", func(ctx context.Context) (int, error) { return 0, errors.New("no room") })
	if err == nil {
		t.Fatal("Call lost the error")
	}
	End(op, nil)
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "provider.create" || spans[1].Name() != "lifecycle.create" {
		t.Fatalf("spans %v", spans)
	}
	if spans[0].Parent().SpanID() != spans[1].SpanContext().SpanID() || spans[0].SpanContext().TraceID() != spans[1].SpanContext().TraceID() {
		t.Error("the provider's span is not the lifecycle's child")
	}
	if spans[0].Status().Code.String() != "Error" {
		t.Errorf("a failed call's span has status %v", spans[0].Status())
	}
	if !trace.SpanContextFromContext(bg).IsValid() {
		t.Error("Detach dropped the span")
	}
}

// What a request costs the metrics while traces are off (the exec round
// trip's path): no allocation.
func BenchmarkRequestTracesOff(b *testing.B) {
	r := httptest.NewRequest("POST", "/api/v1/sandboxes/x/commands", nil)
	b.ReportAllocs()
	for b.Loop() {
		ctx, span := StartRequest(r)
		_ = ctx
		FinishRequest(span, "POST", "POST /api/v1/sandboxes/{id}/commands", 200, time.Millisecond)
		Proxied("agent", 512)
	}
}

// A request's metrics and span while traces are off allocate nothing.
func TestRequestTracesOffAllocatesNothing(t *testing.T) {
	r := httptest.NewRequest("POST", "/api/v1/sandboxes/x/commands", nil)
	allocs := testing.AllocsPerRun(100, func() {
		_, span := StartRequest(r)
		FinishRequest(span, "POST", "POST /api/v1/sandboxes/{id}/commands", 200, time.Millisecond)
		Proxied("agent", 512)
	})
	if allocs != 0 {
		t.Errorf("a request's metrics allocate %v times", allocs)
	}
}
