package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

func TestAtomically(t *testing.T) { dialects(t, atomically) }

// atomically: what a function of Atomically reads and writes is one
// transaction. Its writes are all or none and visible to its own reads; a
// membership it read stays as read until it commits, so a removal racing
// a check made inside waits for the write the check allowed.
func atomically(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	made, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	org, ws := made.Org, made.Workspace
	ada, _, err := s.AddMember(ctx, org.ID, ws.ID, "ada@example.com", "Ada", sbx.RoleAdmin, t0)
	if err != nil {
		t.Fatal(err)
	}

	// All or none, and read back before the commit.
	boom := errors.New("boom")
	err = s.Atomically(ctx, func(ctx context.Context) error {
		k, _, err := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, Name: "first"}, t0)
		if err != nil {
			return err
		}
		if got, err := s.GetAPIKey(ctx, org.ID, k.ID); err != nil || got.Name != "first" {
			t.Errorf("a key made inside, read inside: %+v %v", got, err)
		}
		err = s.Atomically(ctx, func(ctx context.Context) error { // nested: the same transaction
			_, _, err := s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, Name: "second"}, t0)
			return err
		})
		if err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Atomically answers fn's error: %v", err)
	}
	keys, _, err := s.APIKeys(ctx, org.ID, sbx.Page{})
	if err != nil || len(keys) != 0 {
		t.Fatalf("a failed Atomically wrote nothing: %d keys, %v", len(keys), err)
	}

	// A removal racing the check waits for the commit, and makes no
	// deadlock with the key's insert under the org (whose foreign key's
	// check locks the org row the removal holds): the function runs once.
	removed := make(chan error, 1)
	var removedDuring bool
	runs := 0
	err = s.Atomically(ctx, func(ctx context.Context) error {
		runs++
		role, err := s.MemberRole(ctx, ws.ID, ada.User.ID)
		if err != nil || role != sbx.RoleAdmin {
			t.Fatalf("role read inside: %q %v", role, err)
		}
		if runs == 1 {
			go func() {
				_, _, err := s.RemoveMember(context.Background(), org.ID, ws.ID, ada.User.ID)
				removed <- err
			}()
		}
		// Long enough for the removal to commit were it not held back, and
		// past PostgreSQL's deadlock_timeout (1 s), so that a cycle the
		// insert below would close is found in this transaction.
		select {
		case err := <-removed:
			removedDuring = true
			removed <- err
		case <-time.After(1100 * time.Millisecond):
		}
		_, _, err = s.CreateAPIKey(ctx, sbx.APIKey{OrgID: org.ID, Name: "ada's", UserID: ada.User.ID}, t0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 1 {
		t.Errorf("the function ran %d times: a deadlock or a conflict made the transaction run again", runs)
	}
	if removedDuring {
		t.Error("a membership read inside Atomically was removed before its commit")
	}
	if err := <-removed; err != nil {
		t.Fatalf("the removal, after the commit: %v", err)
	}
	if role, _ := s.MemberRole(ctx, ws.ID, ada.User.ID); role != "" {
		t.Errorf("ada is still %q", role)
	}
}
