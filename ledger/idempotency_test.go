package ledger_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

func TestIdempotencyKeys(t *testing.T) { dialects(t, idempotencyKeys) }

// A key made one sandbox: racing inserts with it record exactly one and
// leave no other row; it is found for OnceTTL and per API key; after
// OnceTTL the key may make another.
func idempotencyKeys(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	once := ledger.Once{APIKeyID: "key-a", Key: "k", Hash: "h1"}
	const n = 8
	sandboxes := make([]sbx.Sandbox, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		sandboxes[i] = newSandbox(org, ws, p, t0)
		wg.Go(func() { errs[i] = s.InsertSandboxOnce(ctx, &once, sandboxes[i]) })
	}
	wg.Wait()
	won := ""
	for i, err := range errs {
		switch {
		case err == nil && won != "":
			t.Fatalf("two inserts with one key won: %s and %s", won, sandboxes[i].ID)
		case err == nil:
			won = sandboxes[i].ID
		case !errors.Is(err, ledger.ErrOnceTaken):
			t.Fatalf("a losing insert: %v", err)
		}
	}
	if list, _, _ := s.ListSandboxes(ctx, ledger.Filter{OrgID: org.ID}); len(list) != 1 || list[0].ID != won {
		t.Fatalf("recorded %+v, want only %s", list, won)
	}
	if id, hash, err := s.FindOnce(ctx, once, t0.Add(ledger.OnceTTL)); err != nil || id != won || hash != "h1" {
		t.Fatalf("found %q %q %v, want %s", id, hash, err, won)
	}
	if id, _, _ := s.FindOnce(ctx, ledger.Once{APIKeyID: "key-b", Key: "k"}, t0); id != "" {
		t.Fatalf("another API key's same key found %s", id)
	}
	later := t0.Add(ledger.OnceTTL + time.Second)
	if id, _, _ := s.FindOnce(ctx, once, later); id != "" {
		t.Fatalf("a key past its time found %s", id)
	}
	next := newSandbox(org, ws, p, later)
	again := ledger.Once{APIKeyID: "key-a", Key: "k", Hash: "h2"}
	if err := s.InsertSandboxOnce(ctx, &again, next); err != nil {
		t.Fatalf("a key past its time, used again: %v", err)
	}
	if id, hash, _ := s.FindOnce(ctx, again, later); id != next.ID || hash != "h2" {
		t.Fatalf("found %s %s, want %s h2", id, hash, next.ID)
	}
}
