package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/events"
	"github.com/sbxdev/sbx/oci"
)

// DispatchStore is what the dispatcher reads and writes of the ledger;
// *ledger.Store satisfies it.
type DispatchStore interface {
	EnqueueDeliveries(ctx context.Context, now time.Time, batch int) (int, error)
	ClaimDeliveries(ctx context.Context, now time.Time, n int) ([]sbx.DueDelivery, error)
	FinishDelivery(ctx context.Context, d sbx.WebhookDelivery, now time.Time) error
	RequeueDeliveries(ctx context.Context, now time.Time) (int64, error)
	// EventsAppended is closed at the next commit of events in this process.
	EventsAppended() <-chan struct{}
}

// The dispatcher's defaults.
const (
	DefaultBackoff  = time.Second // the wait before the second attempt, doubled after each
	DefaultAttempts = 8           // attempts before a delivery is a dead letter
	DefaultWorkers  = 4           // deliveries sent at once
	Timeout         = 10 * time.Second
	maxBackoff      = time.Hour
	pollInterval    = time.Second
)

// DispatchConfig is how the dispatcher sends.
type DispatchConfig struct {
	Backoff  time.Duration // 0: DefaultBackoff
	Attempts int           // 0: DefaultAttempts
	Workers  int           // 0: DefaultWorkers
	// Private allows receivers at private addresses (loopback, the LAN);
	// else every connection is dialled to a public address only.
	Private bool
}

// Dispatcher queues a delivery for each event a webhook matches and sends
// them: a small pool of workers, each POST bounded by Timeout, so that a
// receiver that is down or slow holds a worker, never the lifecycle.
// It runs in the one serve leading (Run).
type Dispatcher struct {
	store  DispatchStore
	cfg    DispatchConfig
	client *http.Client
	clock  sbx.Clock
	log    *slog.Logger
}

// NewDispatcher returns a dispatcher over store.
func NewDispatcher(store DispatchStore, cfg DispatchConfig, clock sbx.Clock, log *slog.Logger) *Dispatcher {
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = DefaultAttempts
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // a proxy would dial for us, unchecked
	var allowed func(string) bool
	if cfg.Private {
		allowed = func(string) bool { return true }
	}
	t.DialContext = oci.GuardedDial(&net.Dialer{Timeout: Timeout, KeepAlive: 30 * time.Second}, allowed)
	client := &http.Client{Transport: t, Timeout: Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Dispatcher{store: store, cfg: cfg, client: client, clock: clock, log: log}
}

// Run dispatches until ctx ends: first it queues again the deliveries a
// stopped serve left in progress, then it queues new events' deliveries and
// sends those due, when this process commits events, when a worker
// finishes, and every second.
func (d *Dispatcher) Run(ctx context.Context) {
	if n, err := d.store.RequeueDeliveries(ctx, d.clock.Now()); err != nil {
		d.log.Warn("webhooks: requeueing deliveries left in progress", "err", err)
	} else if n > 0 {
		d.log.Info("webhooks: deliveries left in progress are queued again", "deliveries", n)
	}
	free := make(chan struct{}, d.cfg.Workers) // a token per idle worker
	for range d.cfg.Workers {
		free <- struct{}{}
	}
	finished := make(chan struct{}, d.cfg.Workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		appended := d.store.EventsAppended()
		if _, err := d.store.EnqueueDeliveries(ctx, d.clock.Now(), 500); err != nil && ctx.Err() == nil {
			d.log.Warn("webhooks: queueing deliveries", "err", err)
		}
		if n := len(free); n > 0 {
			due, err := d.store.ClaimDeliveries(ctx, d.clock.Now(), n)
			if err != nil && ctx.Err() == nil {
				d.log.Warn("webhooks: claiming deliveries", "err", err)
			}
			for _, dd := range due {
				<-free
				wg.Go(func() {
					defer func() {
						free <- struct{}{}
						select { // wake the loop, unless it is awake anyway
						case finished <- struct{}{}:
						default:
						}
					}()
					d.deliver(ctx, dd)
				})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-appended:
		case <-finished:
		case <-time.After(pollInterval):
		}
	}
}

// deliver makes one attempt of a delivery and records how it went: 2xx is
// success; else it is queued again after the backoff, or a dead letter
// after the last attempt.
func (d *Dispatcher) deliver(ctx context.Context, dd sbx.DueDelivery) {
	status, err := d.post(ctx, dd)
	if ctx.Err() != nil {
		return // serve is stopping: the next leader queues it again
	}
	out := dd.Delivery
	out.LastStatus, out.LastError = status, ""
	now := d.clock.Now()
	switch {
	case err == nil:
		out.State, out.NextAttemptAt = sbx.DeliverySucceeded, now
	case out.Attempts >= d.cfg.Attempts:
		out.State, out.LastError, out.NextAttemptAt = sbx.DeliveryDeadLetter, err.Error(), now
	default:
		out.State, out.LastError, out.NextAttemptAt = sbx.DeliveryQueued, err.Error(), now.Add(d.backoff(out.Attempts))
	}
	if err := d.store.FinishDelivery(context.WithoutCancel(ctx), out, now); err != nil {
		d.log.Warn("webhooks: recording a delivery", "delivery", out.ID, "err", err)
	}
}

// backoff is the wait after attempt n (1, 2, …) failed: Backoff doubled
// n-1 times, at most an hour.
func (d *Dispatcher) backoff(n int) time.Duration {
	b := d.cfg.Backoff
	for i := 1; i < n && b < maxBackoff; i++ {
		b *= 2
	}
	return min(b, maxBackoff)
}

// post sends dd's event, signed; an answer other than 2xx is an error.
func (d *Dispatcher) post(ctx context.Context, dd sbx.DueDelivery) (int, error) {
	body, err := json.Marshal(events.Render(dd.Event))
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dd.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sbx-webhooks")
	req.Header.Set("Sbx-Event-Id", strconv.FormatInt(dd.Event.Seq, 10))
	req.Header.Set("Sbx-Event-Type", dd.Event.Type)
	req.Header.Set("Sbx-Delivery-Id", dd.Delivery.ID)
	req.Header.Set("Sbx-Signature", Sign(dd.Secret, d.clock.Now(), body))
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "Post "))
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}
