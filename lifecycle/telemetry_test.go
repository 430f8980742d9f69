package lifecycle_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/pricing"
	"github.com/sbxdev/sbx/telemetry"
)

// metric reads one sample of the recorded metrics (labels "k=v" each, all
// of the sample's): a counter's value, a histogram's count; 0 when absent.
func metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	telemetry.Handler(nil, slog.New(slog.DiscardHandler)).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	f := families[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			want := l.GetName() + "=" + l.GetValue()
			found := false
			for _, kv := range labels {
				found = found || kv == want
			}
			if !found {
				continue next
			}
		}
		if m.Histogram != nil {
			return float64(m.Histogram.GetSampleCount())
		}
		return m.GetCounter().GetValue()
	}
	return 0
}

// moved reports what f did to a metric.
func moved(t *testing.T, f func(), name string, labels ...string) float64 {
	t.Helper()
	before := metric(t, name, labels...)
	f()
	return metric(t, name, labels...) - before
}

// The reaper's actions, and the lifecycle operations they are, are counted.
func TestReaperActionsAreCounted(t *testing.T) {
	e := newEnv(t)
	e.create(lifecycle.CreateRequest{Timeout: 10 * time.Second})
	e.create(lifecycle.CreateRequest{Timeout: 10 * time.Second, AutoPause: true})
	reap := func() { e.clock.Advance(10 * time.Second); e.loops().Reap(context.Background()) }
	kills, pauses := metric(t, "sbx_reaper_actions_total", "action=kill_expired", "outcome=ok"), metric(t, "sbx_reaper_actions_total", "action=pause_expired", "outcome=ok")
	deletes := moved(t, reap, "sbx_lifecycle_operation_duration_seconds", "verb=delete", "provider=memory", "outcome=ok")
	if deletes != 1 {
		t.Errorf("the reaper's kill moved the deletes by %v", deletes)
	}
	if d := metric(t, "sbx_reaper_actions_total", "action=kill_expired", "outcome=ok") - kills; d != 1 {
		t.Errorf("kill_expired moved by %v", d)
	}
	if d := metric(t, "sbx_reaper_actions_total", "action=pause_expired", "outcome=ok") - pauses; d != 1 {
		t.Errorf("pause_expired moved by %v", d)
	}
}

// The meter's settlements and the credits they bill are counted.
func TestMeterSettlementsAreCounted(t *testing.T) {
	e := newEnv(t)
	if err := e.store.AddRate(context.Background(), pricing.Rate{Resource: pricing.CPU, NanosPerSecond: 500_000_000, EffectiveAt: e.clock.Now()}, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	e.create(lifecycle.CreateRequest{Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 512}})
	e.clock.Advance(time.Minute)
	billed := metric(t, "sbx_credits_billed_total", "kind=sandbox")
	if d := moved(t, func() { e.loops().Meter(context.Background()) }, "sbx_meter_settlements_total", "kind=sandbox", "outcome=ok"); d != 1 {
		t.Errorf("one sandbox settled moved the settlements by %v", d)
	}
	if metric(t, "sbx_credits_billed_total", "kind=sandbox") <= billed {
		t.Error("a minute of a running sandbox billed no credits")
	}
}

// A create the provider fails is an operation and a provider call that
// failed.
func TestFailedCreateIsCounted(t *testing.T) {
	e := newEnv(t)
	calls := metric(t, "sbx_provider_call_duration_seconds", "provider=memory", "call=create", "outcome=error")
	fail := func() {
		_, err := e.m.Create(context.Background(), e.caller, lifecycle.CreateRequest{TemplateID: "fail-start", WaitReady: true})
		if err == nil || !strings.Contains(err.Error(), "failed to start") {
			t.Fatalf("create of a failing template: %v", err)
		}
	}
	if d := moved(t, fail, "sbx_lifecycle_operation_duration_seconds", "verb=create", "provider=memory", "outcome=error"); d != 1 {
		t.Errorf("a failed create moved the failed creates by %v", d)
	}
	if d := metric(t, "sbx_provider_call_duration_seconds", "provider=memory", "call=create", "outcome=error") - calls; d != 1 {
		t.Errorf("a failed create moved the failed provider calls by %v", d)
	}
}
