package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/telemetry"
)

// metricsHandler serves the metrics: those the layers record, and at each
// scrape the ledger's counts and this host's capacity against what the
// default provider's sandboxes hold (its network's addresses when it has
// one).
func metricsHandler(cfg Config, store *ledger.Store, mgr *lifecycle.Manager, providers []sbx.Provider, log *slog.Logger) http.Handler {
	census := &telemetry.Census{Ledger: store, Host: mgr, CPUs: runtime.NumCPU(), MemoryBytes: hostMemoryMB() << 20, Log: log}
	for _, p := range providers {
		if a, ok := p.(interface{ Addresses() (int, int, bool) }); ok && p.Name() == cfg.DefaultProvider {
			census.Addresses = a.Addresses
		}
	}
	return telemetry.Handler(census, log)
}

// serveMetrics serves the metrics without authentication at
// cfg.MetricsListen, for a scraper on the operator's network, until stop.
func serveMetrics(cfg Config, metrics http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", cfg.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("the metrics listener stopped", "err", err)
		}
	}()
	log.Info("metrics serving", "addr", ln.Addr().String(), "path", "/metrics")
	return func() { srv.Close() }, nil
}

// startTraces turns traces on when the OTEL_* variables ask for them, and
// answers what flushes them at the end.
func startTraces(ctx context.Context, log *slog.Logger) (flush func(), err error) {
	on, shutdown, err := telemetry.Setup(ctx)
	if err != nil {
		return nil, err
	}
	if on {
		log.Info("traces exported over OTLP/HTTP, as the OTEL_* variables configure them")
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("flushing the last traces failed", "err", err)
		}
	}, nil
}
