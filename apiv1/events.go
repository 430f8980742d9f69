package apiv1

import (
	"encoding/json"
	"time"
)

// Events: an org's event log (every state change and timeline step of its
// sandboxes, runtimes, snapshots and template builds, and its credit
// events), read after an ID and followed as server-sent events; and the
// webhooks that get them as signed POSTs.

// OrgEvent is one event of an org. It is also the body of a webhook's POST.
type OrgEvent struct {
	ID          int64           `json:"id" doc:"The event's ID: dense and increasing per org, in commit order. Read or follow with after=ID (or Last-Event-ID) to resume after it."`
	Type        string          `json:"type" doc:"sandbox.<step> (a sandbox's timeline step: creating, ready, pausing, paused, resuming, resumed, killing, killed, failed, …), runtime.<status> (running, paused, idle), runtime.started, runtime.configured, snapshot.<state>, template_build.<state>, credits.top_up, credits.exhausted, credits.auto_paused."`
	At          time.Time       `json:"at"`
	OrgID       string          `json:"orgID"`
	WorkspaceID string          `json:"workspaceID,omitempty" doc:"Absent for the org's own events (credits)."`
	ProjectID   string          `json:"projectID,omitempty"`
	Sandbox     string          `json:"sandbox,omitempty" doc:"The sbx ID (UUID) of the sandbox the event is about, if any."`
	Subject     string          `json:"subject,omitempty" doc:"The ID of what changed: a sandbox's provider sandbox ID, a runtime's, a snapshot's or a build's ID."`
	Data        json.RawMessage `json:"data" doc:"The event's detail: a small JSON object (step, state, detail, pauseReason, …)."`
}

// EventList is one page of an org's events after an ID, oldest first.
type EventList struct {
	Items []OrgEvent `json:"items"`
	Next  int64      `json:"next" doc:"The ID to give as after for the next read: the last item's, or after itself when there is none."`
}

// Webhook is an org's registration of a URL for its events (never its
// secret).
type Webhook struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Types     []string  `json:"types" doc:"The event types it gets (a type or a prefix such as sandbox.*); empty: all."`
	CreatedAt time.Time `json:"created_at"`
	Cursor    int64     `json:"cursor" doc:"The ID of the last event queued for it."`
}

// WebhookList is an org's webhooks.
type WebhookList struct {
	Items []Webhook `json:"items"`
}

// CreateWebhookRequest is the body of POST /api/v1/org/{org}/webhooks.
type CreateWebhookRequest struct {
	URL    string   `json:"url" doc:"An http or https URL, at most 2048 bytes; unless the operator allows private addresses, it must resolve to public ones."`
	Types  []string `json:"types,omitempty" doc:"Event types (sandbox.paused) or prefixes (sandbox.*), at most 50; empty: every type."`
	Secret string   `json:"secret,omitempty" doc:"The signing secret, 16 to 256 bytes; empty: one is made (whsec_…) and answered once."`
}

// CreatedWebhook answers a webhook's registration, with its secret: the
// only answer that carries it.
type CreatedWebhook struct {
	Webhook Webhook `json:"webhook"`
	Secret  string  `json:"secret" doc:"The signing secret: Sbx-Signature is t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \"<t>.<body>\")>. Shown only here."`
}

// WebhookDelivery is one event sent, or to be sent, to a webhook.
type WebhookDelivery struct {
	ID            string    `json:"id"`
	WebhookID     string    `json:"webhook_id"`
	EventID       int64     `json:"event_id"`
	EventType     string    `json:"event_type"`
	State         string    `json:"state" enum:"queued,in_progress,succeeded,dead_letter"`
	Attempts      int       `json:"attempts"`
	NextAttemptAt time.Time `json:"next_attempt_at" doc:"When a queued delivery is next tried."`
	LastStatus    int       `json:"last_status,omitempty" doc:"The receiver's HTTP status at the last attempt."`
	LastError     string    `json:"last_error,omitempty" doc:"Why the last attempt failed."`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// WebhookDeliveryList is a webhook's deliveries, newest event first.
type WebhookDeliveryList struct {
	Items []WebhookDelivery `json:"items"`
}
