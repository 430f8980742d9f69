package events

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
)

// logStore is an org's log in memory, with a bell rung on append.
type logStore struct {
	mu   sync.Mutex
	log  []sbx.OrgEvent
	bell chan struct{}
}

func (l *logStore) OrgEvents(_ context.Context, _ string, _ sbx.Reach, f sbx.EventFilter) ([]sbx.OrgEvent, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []sbx.OrgEvent
	for _, e := range l.log {
		if e.Seq > f.After && sbx.EventTypeMatches(f.Types, e.Type) && len(out) < f.Limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (l *logStore) EventsAppended() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bell
}

func (l *logStore) append(typ string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log = append(l.log, sbx.OrgEvent{Seq: int64(len(l.log) + 1), Type: typ})
	close(l.bell)
	l.bell = make(chan struct{})
}

func TestFollowPassesTheLogThenWhatIsAppended(t *testing.T) {
	store := &logStore{bell: make(chan struct{})}
	for range 5 {
		store.append("sandbox.ready")
	}
	s := New(store)
	s.poll = time.Hour // only the bell wakes it
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan int64, 100)
	done := make(chan error)
	go func() {
		done <- s.Follow(ctx, sbx.Caller{}, Query{After: 1, Types: []string{"sandbox.*"}, Limit: 2}, func(list []sbx.OrgEvent) error {
			for _, e := range list {
				got <- e.Seq
			}
			return nil
		})
	}()
	for want := int64(2); want <= 5; want++ {
		if seq := <-got; seq != want {
			t.Fatalf("followed %d, want %d", seq, want)
		}
	}
	store.append("credits.top_up") // not followed
	store.append("sandbox.paused")
	if seq := <-got; seq != 7 {
		t.Fatalf("followed %d, want 7", seq)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestQueryCheckNamesEachField(t *testing.T) {
	err := Query{After: -1, Limit: 5000, Types: []string{"Nope!"}}.Check()
	e, ok := err.(*sbx.Error)
	if !ok || len(e.Fields) != 3 || e.Fields[0].Field != "after" || e.Fields[1].Field != "limit" || e.Fields[2].Field != "type" {
		t.Fatalf("Check = %v", err)
	}
	if err := (Query{Types: []string{"sandbox.*", "credits.top_up", "*"}}).Check(); err != nil {
		t.Fatal(err)
	}
}
