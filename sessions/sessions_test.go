package sessions_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/internal/testorg"
	"github.com/sbxdev/sbx/sessions"
)

var t0 = testorg.T0

type clock = testorg.Clock

func wantErr(t *testing.T, err error, code sbx.Code, msg string) {
	t.Helper()
	var e *sbx.Error
	if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Message, msg) {
		t.Fatalf("got %v, want %s saying %q", err, code, msg)
	}
}

// Workspace default holds projects default (runtime r1) and two (runtime
// r2); workspace other is beside it. Members of the workspace read and
// write its sessions; a project's key reaches only its runtime's; a member
// of another workspace none.
func TestWhoReachesSessions(t *testing.T) {
	ctx := context.Background()
	o := testorg.New(t, 0)
	store, made := o.Store, o.Made
	orgID, ws := made.Org.ID, made.Workspace
	p2, r2, err := store.CreateProject(ctx, orgID, ws.ID, "two", t0)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := store.CreateWorkspace(ctx, orgID, "other", "", "", t0)
	if err != nil {
		t.Fatal(err)
	}
	owner, ada, bob, pk2 := o.Owner, o.Member(ws.ID, "ada@example.com", sbx.RoleMember), o.Member(other.ID, "bob@example.com", sbx.RoleMember), o.Key(sbx.APIKey{ProjectID: p2.ID})
	svc := sessions.New(store, authz.Policy{Store: store}, clock{})

	s1, err := svc.Create(ctx, owner, "default", made.Runtime.ID, "one")
	if err != nil || s1.RuntimeID != made.Runtime.ID || s1.CreatedBy != owner.Key.ID || !s1.CreatedAt.Equal(t0) || s1.Title != "one" {
		t.Fatalf("the owner's key makes one, by the key: %+v %v", s1, err)
	}
	s2, err := svc.Create(ctx, ada, ws.ID, r2.ID, "two")
	if err != nil || s2.CreatedBy != ada.User.ID {
		t.Fatalf("a member makes one, by the member: %+v %v", s2, err)
	}
	s3, err := svc.Create(ctx, pk2, "default", r2.ID, "")
	if err != nil || s3.CreatedBy != pk2.Key.ID {
		t.Fatalf("a project's key makes one on its runtime: %+v %v", s3, err)
	}
	_, err = svc.Create(ctx, owner, "default", "", "x")
	wantErr(t, err, sbx.EInvalid, "runtime_id is required: the runtime the session is on")
	_, err = svc.Create(ctx, pk2, "default", made.Runtime.ID, "x")
	wantErr(t, err, sbx.ENotFound, "runtime "+made.Runtime.ID+" not found in this workspace")
	_, err = svc.Create(ctx, owner, "other", made.Runtime.ID, "x")
	wantErr(t, err, sbx.ENotFound, "not found in this workspace")
	_, err = svc.Create(ctx, bob, "default", made.Runtime.ID, "x")
	wantErr(t, err, sbx.EForbidden, "creating a session needs the member, admin or owner role in workspace default; this key does not reach it")
	_, err = svc.Create(ctx, pk2, "other", made.Runtime.ID, "x")
	wantErr(t, err, sbx.EForbidden, "this key does not reach it")
	_, err = svc.Create(ctx, owner, "nope", made.Runtime.ID, "x")
	wantErr(t, err, sbx.ENotFound, "")

	ids := func(list []sbx.Session) string { // the titles, sorted: all were made at t0, so the page's order is the IDs'
		var out []string
		for _, se := range list {
			out = append(out, se.Title)
		}
		sort.Strings(out)
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		who     string
		c       sbx.Caller
		runtime string
		want    string
	}{
		{"the owner", owner, "", ",one,two"},
		{"the owner, on r2", owner, r2.ID, ",two"},
		{"a member", ada, "", ",one,two"},
		{"the project's key", pk2, "", ",two"},
		{"the project's key, on r2", pk2, r2.ID, ",two"},
	} {
		list, _, err := svc.List(ctx, c.c, "default", c.runtime, sbx.Page{})
		if err != nil || ids(list) != c.want {
			t.Errorf("%s lists %q %v, want %q", c.who, ids(list), err, c.want)
		}
	}
	_, _, err = svc.List(ctx, pk2, "default", made.Runtime.ID, sbx.Page{})
	wantErr(t, err, sbx.ENotFound, "runtime "+made.Runtime.ID+" not found in this workspace")
	_, _, err = svc.List(ctx, bob, "default", "", sbx.Page{})
	wantErr(t, err, sbx.EForbidden, "listing sessions needs the member, admin or owner role in workspace default")
	if list, _, err := svc.List(ctx, bob, "other", "", sbx.Page{}); err != nil || len(list) != 0 {
		t.Errorf("bob's workspace has none: %+v %v", list, err)
	}

	// A session on a runtime the key does not reach is not found, whatever
	// is done to it.
	notFound := "session " + s1.ID + " not found in this workspace"
	_, err = svc.Get(ctx, pk2, "default", s1.ID)
	wantErr(t, err, sbx.ENotFound, notFound)
	_, _, err = svc.Messages(ctx, pk2, "default", s1.ID, sbx.Page{})
	wantErr(t, err, sbx.ENotFound, notFound)
	_, err = svc.Append(ctx, pk2, "default", s1.ID, []sbx.SessionMessage{{Role: "user", Content: "hi"}})
	wantErr(t, err, sbx.ENotFound, notFound)
	_, err = svc.Get(ctx, bob, "default", s1.ID)
	wantErr(t, err, sbx.EForbidden, "reading a session needs the member, admin or owner role in workspace default")
	_, err = svc.Append(ctx, bob, "default", s1.ID, []sbx.SessionMessage{{Role: "user", Content: "hi"}})
	wantErr(t, err, sbx.EForbidden, "appending to a session needs the member, admin or owner role")
	if se, err := svc.Get(ctx, pk2, "default", s3.ID); err != nil || se.ID != s3.ID {
		t.Errorf("the project's key reads its runtime's: %+v %v", se, err)
	}

	msgs, err := svc.Append(ctx, ada, "default", s1.ID, []sbx.SessionMessage{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}})
	if err != nil || len(msgs) != 2 || msgs[0].Seq != 1 || msgs[1].Seq != 2 || !msgs[1].CreatedAt.Equal(t0) {
		t.Fatalf("append: %+v %v", msgs, err)
	}
	_, err = svc.Append(ctx, ada, "default", s1.ID, []sbx.SessionMessage{{Role: "robot", Content: "x"}})
	wantErr(t, err, sbx.EInvalid, `messages[0].role "robot" must be one of user, assistant, system, tool`)
	page, next, err := svc.Messages(ctx, owner, "default", s1.ID, sbx.Page{Limit: 1})
	if err != nil || len(page) != 1 || page[0].Content != "hi" || next != "1" {
		t.Fatalf("first page: %+v %q %v", page, next, err)
	}
	page, next, err = svc.Messages(ctx, ada, "default", s1.ID, sbx.Page{Limit: 1, Cursor: next})
	if err != nil || len(page) != 1 || page[0].Seq != 2 || next != "" {
		t.Fatalf("last page: %+v %q %v", page, next, err)
	}
}
