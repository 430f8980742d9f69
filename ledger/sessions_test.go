package ledger_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

func TestSessions(t *testing.T) { dialects(t, sessions) }

func sessions(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	made, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	org, ws, rt := made.Org, made.Workspace, made.Runtime
	research, rp, _ := s.CreateWorkspace(ctx, org.ID, "research", "", "", t0)
	rrt, _ := s.Runtime(ctx, rp.ID)
	other, _ := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "other"}, t0)

	first, err := s.CreateSession(ctx, org.ID, ws.ID, rt.ID, "fix the flaky test", "user-1", t0)
	if err != nil || first.ID == "" || first.RuntimeID != rt.ID || first.WorkspaceID != ws.ID || first.Title != "fix the flaky test" ||
		first.CreatedBy != "user-1" || !first.CreatedAt.Equal(t0) || !first.UpdatedAt.Equal(t0) {
		t.Fatalf("CreateSession: %+v %v", first, err)
	}
	second, _ := s.CreateSession(ctx, org.ID, ws.ID, rt.ID, "", "key-1", t0.Add(time.Second))
	third, _ := s.CreateSession(ctx, org.ID, research.ID, rrt.ID, "", "key-1", t0.Add(2*time.Second))

	// The runtime must be the workspace's; the title short, with no NUL.
	_, err = s.CreateSession(ctx, org.ID, ws.ID, rrt.ID, "", "u", t0)
	wantCode(t, err, sbx.ENotFound, "runtime "+rrt.ID+" not found in this workspace")
	_, err = s.CreateSession(ctx, other.Org.ID, other.Workspace.ID, rt.ID, "", "u", t0)
	wantCode(t, err, sbx.ENotFound, "runtime "+rt.ID+" not found")
	_, err = s.CreateSession(ctx, org.ID, ws.ID, rt.ID, strings.Repeat("t", 257), "u", t0)
	wantCode(t, err, sbx.EInvalid, "title is longer than 256 bytes")
	_, err = s.CreateSession(ctx, org.ID, ws.ID, rt.ID, "a\x00", "u", t0)
	wantCode(t, err, sbx.EInvalid, "title holds a NUL")

	// Lists page oldest first, by workspace and by runtime.
	list, next, err := s.Sessions(ctx, org.ID, ws.ID, "", ledger.Page{Limit: 1})
	if err != nil || len(list) != 1 || list[0].ID != first.ID || next == "" {
		t.Fatalf("first page: %+v %q %v", list, next, err)
	}
	list, next, err = s.Sessions(ctx, org.ID, ws.ID, "", ledger.Page{Limit: 1, Cursor: next})
	if err != nil || len(list) != 1 || list[0].ID != second.ID || next != "" {
		t.Fatalf("second page: %+v %q %v", list, next, err)
	}
	if list, _, _ := s.Sessions(ctx, org.ID, research.ID, rrt.ID, ledger.Page{}); len(list) != 1 || list[0].ID != third.ID {
		t.Fatalf("a runtime's sessions: %+v", list)
	}
	if list, _, _ := s.Sessions(ctx, org.ID, ws.ID, rrt.ID, ledger.Page{}); len(list) != 0 {
		t.Fatalf("another workspace's runtime: %+v", list)
	}
	_, _, err = s.Sessions(ctx, org.ID, ws.ID, "", ledger.Page{Cursor: "junk"})
	wantCode(t, err, sbx.EInvalid, "cursor")

	if got, err := s.GetSession(ctx, org.ID, ws.ID, first.ID); err != nil || got != first {
		t.Fatalf("GetSession: %+v %v", got, err)
	}
	_, err = s.GetSession(ctx, org.ID, research.ID, first.ID)
	wantCode(t, err, sbx.ENotFound, "session "+first.ID+" not found in this workspace")
	_, err = s.GetSession(ctx, other.Org.ID, other.Workspace.ID, first.ID)
	wantCode(t, err, sbx.ENotFound, "not found")

	// Appends number their messages after the last, all or none.
	t1 := t0.Add(time.Minute)
	got, err := s.AppendSessionMessages(ctx, org.ID, ws.ID, first.ID, []sbx.SessionMessage{
		{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, t1)
	if err != nil || len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 || got[1].Role != "user" || got[1].Content != "hi" || !got[0].CreatedAt.Equal(t1) {
		t.Fatalf("append: %+v %v", got, err)
	}
	got, err = s.AppendSessionMessages(ctx, org.ID, ws.ID, first.ID, []sbx.SessionMessage{{Role: "assistant", Content: ""}}, t1)
	if err != nil || len(got) != 1 || got[0].Seq != 3 {
		t.Fatalf("second append: %+v %v", got, err)
	}
	if se, _ := s.GetSession(ctx, org.ID, ws.ID, first.ID); !se.UpdatedAt.Equal(t1) || !se.CreatedAt.Equal(t0) {
		t.Fatalf("an append moves updated_at: %+v", se)
	}
	for _, c := range []struct {
		msgs   []sbx.SessionMessage
		detail string
	}{
		{nil, "messages must hold 1 to 100 messages, not 0"},
		{make([]sbx.SessionMessage, 101), "not 101"},
		{[]sbx.SessionMessage{{Role: "user", Content: "ok"}, {Role: "robot", Content: "x"}}, `messages[1].role "robot" must be one of user, assistant, system, tool`},
		{[]sbx.SessionMessage{{Role: "tool", Content: strings.Repeat("x", 256<<10+1)}}, "messages[0].content is longer than 262144 bytes"},
		{[]sbx.SessionMessage{{Role: "tool", Content: "\x00"}}, "messages[0].content holds a NUL"},
	} {
		_, err := s.AppendSessionMessages(ctx, org.ID, ws.ID, first.ID, c.msgs, t1)
		wantCode(t, err, sbx.EInvalid, c.detail)
	}
	_, err = s.AppendSessionMessages(ctx, org.ID, research.ID, first.ID, []sbx.SessionMessage{{Role: "user"}}, t1)
	wantCode(t, err, sbx.ENotFound, "session "+first.ID+" not found in this workspace")

	// The transcript pages by seq.
	msgs, next, err := s.SessionMessages(ctx, org.ID, ws.ID, first.ID, ledger.Page{Limit: 2})
	if err != nil || len(msgs) != 2 || msgs[0].Seq != 1 || msgs[0].Content != "be brief" || msgs[1].Seq != 2 || next != "2" {
		t.Fatalf("first page of messages: %+v %q %v", msgs, next, err)
	}
	msgs, next, err = s.SessionMessages(ctx, org.ID, ws.ID, first.ID, ledger.Page{Limit: 2, Cursor: next})
	if err != nil || len(msgs) != 1 || msgs[0].Seq != 3 || msgs[0].Role != "assistant" || next != "" {
		t.Fatalf("last page of messages: %+v %q %v", msgs, next, err)
	}
	if msgs, next, _ := s.SessionMessages(ctx, org.ID, ws.ID, first.ID, ledger.Page{Cursor: "3"}); len(msgs) != 0 || next != "" {
		t.Fatalf("after the last message: %+v %q", msgs, next)
	}
	if msgs, _, _ := s.SessionMessages(ctx, org.ID, ws.ID, second.ID, ledger.Page{}); len(msgs) != 0 {
		t.Fatalf("another session's transcript: %+v", msgs)
	}
	for _, bad := range []string{"x", "-1", "1.5"} {
		_, _, err = s.SessionMessages(ctx, org.ID, ws.ID, first.ID, ledger.Page{Cursor: bad})
		wantCode(t, err, sbx.EInvalid, "must be a message's seq")
	}
	_, _, err = s.SessionMessages(ctx, org.ID, research.ID, first.ID, ledger.Page{})
	wantCode(t, err, sbx.ENotFound, "not found in this workspace")
}

// Appends that race number their messages without gaps or repeats, each
// append's messages next to one another.
func TestSessionAppendsTakeTurns(t *testing.T) { dialects(t, sessionAppendsTakeTurns) }

func sessionAppendsTakeTurns(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	made, _ := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme"}, t0)
	se, err := s.CreateSession(ctx, made.Org.ID, made.Workspace.ID, made.Runtime.ID, "", "u", t0)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			var batch []sbx.SessionMessage
			for i := range each {
				batch = append(batch, sbx.SessionMessage{Role: "user", Content: fmt.Sprintf("%d/%d", w, i)})
			}
			_, err := s.AppendSessionMessages(ctx, made.Org.ID, made.Workspace.ID, se.ID, batch, t0)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	msgs, _, err := s.SessionMessages(ctx, made.Org.ID, made.Workspace.ID, se.ID, ledger.Page{})
	if err != nil || len(msgs) != writers*each {
		t.Fatalf("%d messages, %v; want %d", len(msgs), err, writers*each)
	}
	batch := -1
	for i, m := range msgs {
		var w, n int
		fmt.Sscanf(m.Content, "%d/%d", &w, &n)
		if n == 0 {
			batch = w
		}
		if m.Seq != int64(i+1) || n != i%each || w != batch {
			t.Fatalf("message %d is seq %d, %q: appends interleaved or left gaps", i, m.Seq, m.Content)
		}
	}
}
