// Package testorg is test support for the application services: an org on
// a real SQLite ledger of the test's own, made at a fixed time, and the
// callers its keys authenticate as.
package testorg

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

// T0 is when everything of an Org is made.
var T0 = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

// Clock is a clock stopped at T0.
type Clock struct{}

// Now implements sbx.Clock.
func (Clock) Now() time.Time { return T0 }

// After implements sbx.Clock: a stopped clock never fires.
func (Clock) After(time.Duration) <-chan time.Time { return nil }

// Org is the org "acme" of a ledger that ends with the test.
type Org struct {
	t     testing.TB
	Store *ledger.Store
	Made  sbx.CreatedOrg // its workspace default, project default and owner key
	Owner sbx.Caller     // its org-wide key's
}

// New makes the ledger and the org, with credits (micro-credits).
func New(t testing.TB, credits int64) *Org {
	t.Helper()
	ctx := context.Background()
	store, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "ledger.db"), bytes.Repeat([]byte{1}, 32))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	o := &Org{t: t, Store: store}
	if o.Made, err = store.CreateOrgWith(ctx, sbx.NewOrg{Name: "acme", Credits: credits, Key: sbx.APIKey{Name: "owner"}}, T0); err != nil {
		t.Fatal(err)
	}
	o.Owner = o.Auth(o.Made.Secret)
	return o
}

// Auth is the caller a key's secret authenticates as.
func (o *Org) Auth(secret string) sbx.Caller {
	o.t.Helper()
	c, err := o.Store.Authenticate(context.Background(), secret)
	if err != nil {
		o.t.Fatal(err)
	}
	return c
}

// Key makes a key of the org (a project's, a member's, …) and answers its
// caller.
func (o *Org) Key(k sbx.APIKey) sbx.Caller {
	o.t.Helper()
	k.OrgID, k.Name = o.Made.Org.ID, "k"
	_, secret, err := o.Store.CreateAPIKey(context.Background(), k, T0)
	if err != nil {
		o.t.Fatal(err)
	}
	return o.Auth(secret)
}

// Member adds email to workspace ws with role and answers the caller of a
// key that acts as them.
func (o *Org) Member(ws, email string, role sbx.Role) sbx.Caller {
	o.t.Helper()
	m, _, err := o.Store.AddMember(context.Background(), o.Made.Org.ID, ws, email, "", role, T0)
	if err != nil {
		o.t.Fatal(err)
	}
	return o.Key(sbx.APIKey{UserID: m.User.ID})
}

// Operator makes an org of the operator's and answers its key's caller.
func (o *Org) Operator() sbx.Caller {
	o.t.Helper()
	op, err := o.Store.CreateOrgWith(context.Background(), sbx.NewOrg{Name: "ops", Key: sbx.APIKey{Name: "admin", Operator: true}}, T0)
	if err != nil {
		o.t.Fatal(err)
	}
	return o.Auth(op.Secret)
}
