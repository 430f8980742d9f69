package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/sbxdev/sbx"
)

// RetentionStore is what the retention loop writes of the ledger.
type RetentionStore interface {
	PruneOrgEvents(ctx context.Context, before time.Time) (int64, error)
}

// DefaultRetention is how long events are kept when the operator says
// nothing (serve --events-retention).
const DefaultRetention = 30 * 24 * time.Hour

// RunRetention deletes the events older than keep (and the ended webhook
// deliveries as old), at once and then every hour, until ctx ends. The
// serve leading runs it.
func RunRetention(ctx context.Context, store RetentionStore, keep time.Duration, clock sbx.Clock, log *slog.Logger) {
	for {
		if n, err := store.PruneOrgEvents(ctx, clock.Now().Add(-keep)); err != nil && ctx.Err() == nil {
			log.Warn("events: pruning past the retention", "err", err)
		} else if n > 0 {
			log.Info("events: pruned past the retention", "events", n, "retention", keep)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Hour):
		}
	}
}
