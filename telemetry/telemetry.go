// Package telemetry is the control plane's operator view: Prometheus
// metrics (one registry, every metric defined here, and Handler serving
// them with what the ledger and the host say at each scrape) and
// OpenTelemetry traces (Setup: an OTLP/HTTP exporter configured by the
// standard OTEL_* variables, off unless they ask for it; Span and Call for
// the spans of the layers). The layers record through narrow functions
// (Operation, Call, Settled, Reaped, Reconciled, Request, Proxied, SSH…);
// labels are bounded: verbs, providers, outcomes, routes as patterns, never
// a sandbox's or an org's ID (those go on spans only).
package telemetry

import (
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every metric of sbx.
const namespace = "sbx"

// registry holds the metrics the layers record (metrics.go) and the Go
// runtime's and this process's.
var registry = prometheus.NewRegistry()

func init() {
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registry.MustRegister(recorded...)
}

// Handler serves the metrics in Prometheus's text format: those recorded,
// and those census reads at each scrape (nil: none). A census that fails
// leaves its metrics out of that scrape and is logged; the rest are served.
func Handler(census *Census, log *slog.Logger) http.Handler {
	gatherers := prometheus.Gatherers{registry}
	if census != nil {
		scraped := prometheus.NewRegistry()
		scraped.MustRegister(census)
		gatherers = append(gatherers, scraped)
	}
	return promhttp.HandlerFor(gatherers, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
	})
}
