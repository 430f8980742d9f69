package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names sbx's spans' instrumentation scope.
const tracerName = "github.com/sbxdev/sbx"

// tracing is whether Setup turned traces on: when not, a request costs no
// span and no context of its own (StartRequest).
var tracing atomic.Bool

// TracesOn reports whether getenv's OTEL_* variables ask for traces: an
// OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or …_TRACES_ENDPOINT) or
// OTEL_TRACES_EXPORTER=otlp, and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none. An exporter sbx has not (zipkin, console…),
// or a protocol other than http/protobuf, is an error naming the variable.
func TracesOn(getenv func(string) string) (bool, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	switch exporter := getenv("OTEL_TRACES_EXPORTER"); exporter {
	case "none":
		return false, nil
	case "", "otlp":
		for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
			if p := getenv(v); p != "" && p != "http/protobuf" {
				return false, fmt.Errorf("%s=%q: sbx exports traces over OTLP/HTTP only; set it to http/protobuf or unset it", v, p)
			}
		}
		return exporter == "otlp" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: sbx exports traces with otlp (or none)", exporter)
	}
}

// Setup turns traces on when the environment asks for it (TracesOn): an
// OTLP/HTTP exporter configured by the standard variables (endpoint,
// headers, timeout, compression, certificates; batching by OTEL_BSP_*,
// sampling by OTEL_TRACES_SAMPLER, the service by OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES, "sbx" by default). It answers whether traces
// are on, and shutdown, which flushes the spans not yet exported; with
// traces off, spans cost a no-op each.
func Setup(ctx context.Context) (on bool, shutdown func(context.Context) error, err error) {
	noop := func(context.Context) error { return nil }
	if on, err = TracesOn(os.Getenv); !on || err != nil {
		return false, noop, err
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return false, noop, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName("sbx")), resource.Default())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return false, noop, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	tracing.Store(true)
	return true, tp.Shutdown, nil
}

// Span starts a span named name under ctx's, with attrs.
func Span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return otel.Tracer(tracerName).Start(ctx, name, trace.WithAttributes(attrs...))
}

// End ends span, marking it failed with err when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// Call runs f, a call of provider's operation call, in a span of its own
// ("provider.<call>") and records its latency and outcome.
func Call[T any](ctx context.Context, provider, call string, f func(context.Context) (T, error)) (T, error) {
	ctx, span := Span(ctx, "provider."+call, attribute.String("sbx.provider", provider))
	start := time.Now()
	v, err := f(ctx)
	providerCalls.WithLabelValues(provider, call, outcome(err)).Observe(time.Since(start).Seconds())
	End(span, err)
	return v, err
}

// Detach is a context that carries ctx's span, to be the parent of the
// spans of work that goes on in the background after ctx's request is
// answered, but none of ctx's deadline, cancellation or other values.
func Detach(ctx context.Context) context.Context {
	return trace.ContextWithSpanContext(context.Background(), trace.SpanContextFromContext(ctx))
}

// StartRequest starts the span of a request the API listener serves, under
// the span its traceparent header names if any; FinishRequest names it.
// With traces off it answers r's own context and a span that does nothing.
func StartRequest(r *http.Request) (context.Context, trace.Span) {
	if !tracing.Load() {
		return r.Context(), trace.SpanFromContext(r.Context())
	}
	ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	return otel.Tracer(tracerName).Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(r.Method)))
}

// FinishRequest names a request's span by its route (a pattern, not the
// raw path; with its method, as net/http's patterns have it), records its
// status, ends it and records the request's metrics.
func FinishRequest(span trace.Span, method, route string, status int, took time.Duration) {
	Request(route, status, took)
	if !span.IsRecording() {
		return
	}
	name := route
	if !strings.HasPrefix(route, method+" ") {
		name = method + " " + route
	}
	span.SetName(name)
	span.SetAttributes(semconv.HTTPRoute(route), semconv.HTTPResponseStatusCode(status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}
