// Package events is the application service of an org's event log: every
// state change and timeline step of its sandboxes, runtimes, snapshots and
// template builds, and its credit events, which the ledger appends in the
// transaction of the change, numbered densely per org. A caller reads the
// events after an ID (List) and follows new ones as they commit (Follow),
// seeing only what its key reaches (sbx.Caller.Reach), like every other
// read. Webhooks (package webhooks) get the same events.
package events

import (
	"context"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// Store is what the service reads of the ledger; *ledger.Store satisfies it.
type Store interface {
	OrgEvents(ctx context.Context, orgID string, reach sbx.Reach, f sbx.EventFilter) ([]sbx.OrgEvent, error)
	// EventsAppended is closed at the next commit of events in this process.
	EventsAppended() <-chan struct{}
}

// PollInterval is how often Follow reads again without being told of a
// commit: the events other serve processes on the same database append.
const PollInterval = time.Second

// Service reads and follows an org's events for callers in it.
type Service struct {
	store Store
	poll  time.Duration
}

// New returns the service over store.
func New(store Store) *Service { return &Service{store: store, poll: PollInterval} }

// Query is what a read asks: the events after After, of the types Types
// names (a type or a prefix such as sandbox.*; none: all), of one sandbox
// (its sbx or provider ID), of one project; at most Limit (1 to
// sbx.MaxEventPage, default 100).
type Query struct {
	After   int64
	Types   []string
	Sandbox string
	Project string
	Limit   int
}

// Page is one read: the events, oldest first, and the ID to read after next.
type Page struct {
	Items []sbx.OrgEvent
	Next  int64
}

// Check refuses a query with a bad field, naming each: what List and
// Follow answer first (a stream checks it before it starts).
func (q Query) Check() error {
	var p sbx.Problems
	if q.After < 0 {
		p.Add("after", "after is an event ID, 0 or more")
	}
	if q.Limit < 0 || q.Limit > sbx.MaxEventPage {
		p.Add("limit", "limit is 1 to %d", sbx.MaxEventPage)
	}
	if len(q.Types) > 50 {
		p.Add("type", "at most 50 types")
	}
	for _, t := range q.Types {
		if why := sbx.EventTypeProblem(t); why != "" {
			p.Add("type", "type %q: %s", t, why)
		}
	}
	return p.Err()
}

// List answers the events of c's org after q.After that q keeps and c
// reaches, oldest first.
func (s *Service) List(ctx context.Context, c sbx.Caller, q Query) (Page, error) {
	if err := q.Check(); err != nil {
		return Page{}, err
	}
	if q.Limit == 0 {
		q.Limit = 100
	}
	return s.list(ctx, c, q)
}

func (s *Service) list(ctx context.Context, c sbx.Caller, q Query) (Page, error) {
	items, err := s.store.OrgEvents(ctx, c.Org.ID, c.Reach(), sbx.EventFilter{After: q.After, Types: q.Types, Sandbox: q.Sandbox,
		Project: q.Project, Limit: q.Limit})
	page := Page{Items: items, Next: q.After}
	if len(items) > 0 {
		page.Next = items[len(items)-1].Seq
	}
	return page, err
}

// Follow hands fn, in order, every event of c's org after q.After that q
// keeps and c reaches, then each new one as it commits, until ctx ends or
// fn fails (its error is Follow's). It reads again when this process
// commits events and every PollInterval (other processes' events);
// q.Limit bounds each read. A read that finds nothing new calls fn with
// no events, so a stream can send a keepalive when it has been quiet.
func (s *Service) Follow(ctx context.Context, c sbx.Caller, q Query, fn func([]sbx.OrgEvent) error) error {
	if err := q.Check(); err != nil {
		return err
	}
	if q.Limit == 0 {
		q.Limit = sbx.MaxEventPage
	}
	for {
		appended := s.store.EventsAppended() // before the read: a commit after it rings
		page, err := s.list(ctx, c, q)
		if err != nil {
			return err
		}
		if err := fn(page.Items); err != nil {
			return err
		}
		q.After = page.Next
		if len(page.Items) > 0 && len(page.Items) == q.Limit {
			continue // more are waiting
		}
		select {
		case <-ctx.Done():
			return nil
		case <-appended:
		case <-time.After(s.poll):
		}
	}
}

// Render is an event's wire form, as the API lists it and a webhook's POST
// carries it.
func Render(e sbx.OrgEvent) apiv1.OrgEvent {
	data := e.Data
	if len(data) == 0 {
		data = []byte(`{}`)
	}
	return apiv1.OrgEvent{ID: e.Seq, Type: e.Type, At: e.At, OrgID: e.OrgID, WorkspaceID: e.WorkspaceID, ProjectID: e.ProjectID,
		Sandbox: e.SandboxID, Subject: e.Subject, Data: data}
}
