package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sbxdev/sbx/apiv1"
)

// An org's event log, read after an ID and followed as it grows, and its
// webhooks. org is the org's ID or name.

// EventQuery filters the org's events: those after After, of Types (a
// type or a prefix such as sandbox.*; none: all), of one Sandbox or
// Project; Limit per read (0: the server's default).
type EventQuery struct {
	After   int64
	Types   []string
	Sandbox string
	Project string
	Limit   int
}

func (q EventQuery) values() url.Values {
	v := url.Values{}
	if q.After > 0 {
		v.Set("after", strconv.FormatInt(q.After, 10))
	}
	for _, t := range q.Types {
		v.Add("type", t)
	}
	if q.Sandbox != "" {
		v.Set("sandbox", q.Sandbox)
	}
	if q.Project != "" {
		v.Set("project", q.Project)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// Events reads one page of the org's events after q.After, oldest first;
// its Next is the After of the next read.
func (c *Client) Events(ctx context.Context, q EventQuery) (*apiv1.EventList, error) {
	return call[apiv1.EventList](ctx, c, http.MethodGet, "/api/v1/events", q.values(), nil)
}

// FollowEvents passes fn every event after q.After, then each new one as
// it commits, until ctx ends (nil) or fn answers an error (io.EOF stops it
// with nil). A stream cut by the network or a restart of serve is opened
// again after the last event fn got, so none is missed; an answer of the
// API's (a 4xx) ends it with that error.
func (c *Client) FollowEvents(ctx context.Context, q EventQuery, fn func(apiv1.OrgEvent) error) error {
	for {
		err := c.followEvents(ctx, &q, fn)
		var apiErr *apiv1.Error
		switch {
		case errors.Is(err, errStop): // fn's error, or a stream it cannot read
			return unwrapStop(err)
		case ctx.Err() != nil:
			return nil
		case errors.As(err, &apiErr):
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// errStop wraps fn's error, which ends FollowEvents.
var errStop = errors.New("stopped")

type stopErr struct{ err error }

func (e stopErr) Error() string        { return e.err.Error() }
func (e stopErr) Is(target error) bool { return target == errStop }
func (e stopErr) Unwrap() error        { return e.err }

func unwrapStop(err error) error {
	var s stopErr
	if errors.As(err, &s) {
		if errors.Is(s.err, io.EOF) {
			return nil
		}
		return s.err
	}
	return err
}

// followEvents reads one stream, moving q.After past each event fn got.
func (c *Client) followEvents(ctx context.Context, q *EventQuery, fn func(apiv1.OrgEvent) error) error {
	resp, err := c.send(ctx, http.MethodGet, "/api/v1/events/stream", q.values(), "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var data strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "" && data.Len() > 0: // the end of an event
			var e apiv1.OrgEvent
			if err := json.Unmarshal([]byte(data.String()), &e); err != nil {
				return stopErr{fmt.Errorf("decoding an event: %w", err)}
			}
			data.Reset()
			if err := fn(e); err != nil {
				return stopErr{err}
			}
			q.After = e.ID
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
}

// Webhooks lists the org's webhooks (never their secrets).
func (c *Client) Webhooks(ctx context.Context, org string) (*apiv1.WebhookList, error) {
	return call[apiv1.WebhookList](ctx, c, http.MethodGet, orgPath(org, "webhooks"), nil, nil)
}

// AddWebhook registers a webhook; the answer carries its secret, once.
func (c *Client) AddWebhook(ctx context.Context, org string, req apiv1.CreateWebhookRequest) (*apiv1.CreatedWebhook, error) {
	return call[apiv1.CreatedWebhook](ctx, c, http.MethodPost, orgPath(org, "webhooks"), nil, req)
}

// DeleteWebhook removes a webhook and its deliveries.
func (c *Client) DeleteWebhook(ctx context.Context, org, id string) (*apiv1.Webhook, error) {
	return call[apiv1.Webhook](ctx, c, http.MethodDelete, orgPath(org, "webhooks", id), nil, nil)
}

// WebhookDeliveries lists a webhook's deliveries, newest event first, in
// state when not "".
func (c *Client) WebhookDeliveries(ctx context.Context, org, id, state string) (*apiv1.WebhookDeliveryList, error) {
	var q url.Values
	if state != "" {
		q = url.Values{"state": {state}}
	}
	return call[apiv1.WebhookDeliveryList](ctx, c, http.MethodGet, orgPath(org, "webhooks", id, "deliveries"), q, nil)
}

// Redeliver queues a webhook's delivery again, due now.
func (c *Client) Redeliver(ctx context.Context, org, id, delivery string) (*apiv1.WebhookDelivery, error) {
	return call[apiv1.WebhookDelivery](ctx, c, http.MethodPost, orgPath(org, "webhooks", id, "deliveries", delivery, "redeliver"), nil, nil)
}
