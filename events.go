package sbx

import (
	"encoding/json"
	"strings"
	"time"
)

// OrgEvent is one entry of an org's event log: a state change or timeline
// step of a sandbox, runtime, snapshot or template build, or a credit event,
// recorded by the ledger in the transaction that made the change. Seq
// numbers an org's events densely from 1, in commit order, so a reader that
// asks for the events after the last Seq it saw misses none.
type OrgEvent struct {
	OrgID       string
	Seq         int64
	At          time.Time
	Type        string // e.g. sandbox.paused, snapshot.ready, credits.top_up
	WorkspaceID string // "" for the org's own (credit) events
	ProjectID   string
	SandboxID   string // the sandbox's sbx ID, "" when none
	Subject     string // the ID of the sandbox, runtime, snapshot or build; "" for the org's
	Data        json.RawMessage
}

// EventData marshals the small JSON object an OrgEvent carries.
func EventData(fields map[string]any) json.RawMessage {
	b, err := json.Marshal(fields)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// Event types that are not a sandbox's timeline step (those are
// "sandbox.<step>").
const (
	EventCreditsTopUp     = "credits.top_up"
	EventCreditsExhausted = "credits.exhausted"
	EventCreditsPaused    = "credits.auto_paused"
)

// EventTypeMatches reports whether an event of type t is one that patterns
// name: a pattern is a type, or a prefix ending in ".*" (sandbox.*); no
// patterns match every type.
func EventTypeMatches(patterns []string, t string) bool {
	if len(patterns) == 0 {
		return true
	}
	for _, p := range patterns {
		if p == t || p == "*" || (strings.HasSuffix(p, ".*") && strings.HasPrefix(t, p[:len(p)-1])) {
			return true
		}
	}
	return false
}

// EventTypeProblem says what is wrong with an event type pattern, or "":
// lowercase letters, digits, '_' and '.', optionally ending in ".*", at
// most 64 characters.
func EventTypeProblem(p string) string {
	if p == "*" {
		return ""
	}
	base := strings.TrimSuffix(p, ".*")
	if base == "" || len(p) > 64 {
		return "an event type is 1-64 characters"
	}
	for _, c := range base {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return "an event type is lowercase letters, digits, '_' and '.', or a prefix ending in .* (sandbox.*)"
		}
	}
	return ""
}

// Webhook is an org's registration of a URL that gets the org's events of
// the types it names (none: all) as signed POSTs.
type Webhook struct {
	ID        string // wh-…
	OrgID     string
	URL       string
	Types     []string
	CreatedAt time.Time
	Cursor    int64 // the seq of the last event enqueued for it
}

// DeliveryState is where a webhook delivery stands.
type DeliveryState string

// The states of a delivery.
const (
	DeliveryQueued     DeliveryState = "queued"
	DeliveryInProgress DeliveryState = "in_progress"
	DeliverySucceeded  DeliveryState = "succeeded"
	DeliveryDeadLetter DeliveryState = "dead_letter"
)

// ValidDeliveryState reports whether s names a delivery state.
func ValidDeliveryState(s DeliveryState) bool {
	switch s {
	case DeliveryQueued, DeliveryInProgress, DeliverySucceeded, DeliveryDeadLetter:
		return true
	}
	return false
}

// WebhookDelivery is one event sent, or to be sent, to one webhook.
type WebhookDelivery struct {
	ID            string // whd-…
	WebhookID     string
	OrgID         string
	Seq           int64 // the event's
	EventType     string
	State         DeliveryState
	Attempts      int
	NextAttemptAt time.Time
	LastStatus    int    // the receiver's last HTTP status, 0 when none
	LastError     string // why the last attempt failed
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// EventFilter narrows a read of an org's events: the events after a seq,
// of some types (EventTypeMatches patterns), of one sandbox (its sbx or
// provider ID), of one project; at most Limit (default and most
// MaxEventPage).
type EventFilter struct {
	After   int64
	Types   []string
	Sandbox string
	Project string
	Limit   int
}

// MaxEventPage is the most events one read answers.
const MaxEventPage = 1000

// DueDelivery is a webhook delivery claimed for an attempt, with what it
// takes: where to send it, the secret to sign it with, and its event.
type DueDelivery struct {
	Delivery WebhookDelivery
	URL      string
	Secret   string
	Event    OrgEvent
}
