package secrets_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/internal/testorg"
	"github.com/sbxdev/sbx/secrets"
)

var t0 = testorg.T0

// org is an org on a real SQLite ledger with a caller of every kind.
type org struct {
	svc                                  *secrets.Service
	owner, admin, member, other, project sbx.Caller
}

func newOrg(t *testing.T) org {
	t.Helper()
	o := testorg.New(t, 0)
	ws := o.Made.Workspace.ID
	return org{
		svc:   secrets.New(o.Store, authz.Policy{Store: o.Store}, testorg.Clock{}),
		owner: o.Owner, admin: o.Member(ws, "admin@example.com", sbx.RoleAdmin),
		member: o.Member(ws, "ada@example.com", sbx.RoleMember), other: o.Member(ws, "bob@example.com", sbx.RoleMember),
		project: o.Key(sbx.APIKey{ProjectID: o.Made.Project.ID}),
	}
}

func wantErr(t *testing.T, err error, code sbx.Code, msg string) {
	t.Helper()
	var e *sbx.Error
	if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Message, msg) {
		t.Fatalf("got %v, want %s saying %q", err, code, msg)
	}
}

// Owners and admins set and remove the org's secrets; members and project
// keys neither.
func TestOrgSecretsNeedAdmin(t *testing.T) {
	o, ctx := newOrg(t), context.Background()
	sec, created, err := o.svc.Set(ctx, o.owner, "", "TOKEN", "v1")
	if err != nil || !created || sec.Scope() != sbx.SecretScopeOrg || sec.Name != "TOKEN" || !sec.UpdatedAt.Equal(t0) {
		t.Fatalf("owner sets: %+v %v %v", sec, created, err)
	}
	again, created, err := o.svc.Set(ctx, o.owner, sbx.SecretScopeOrg, "TOKEN", "v2")
	if err != nil || created || again.ID != sec.ID {
		t.Fatalf("owner sets again: %+v %v %v", again, created, err)
	}
	for _, scope := range []string{"", sbx.SecretScopeOrg} {
		_, _, err = o.svc.Set(ctx, o.member, scope, "TOKEN", "x")
		wantErr(t, err, sbx.EForbidden, "setting an org secret needs the admin or owner role; this key acts as member")
		_, _, err = o.svc.Set(ctx, o.project, scope, "TOKEN", "x")
		wantErr(t, err, sbx.EForbidden, "setting an org secret needs the admin or owner role; this key acts as member")
	}
	if _, created, err = o.svc.Set(ctx, o.admin, sbx.SecretScopeOrg, "BY_ADMIN", "v"); err != nil || !created {
		t.Fatalf("admin sets: %v %v", created, err)
	}

	_, err = o.svc.Delete(ctx, o.member, "", "TOKEN")
	wantErr(t, err, sbx.EForbidden, "removing an org secret needs the admin or owner role; this key acts as member")
	_, err = o.svc.Delete(ctx, o.project, sbx.SecretScopeOrg, sec.ID)
	wantErr(t, err, sbx.EForbidden, "removing an org secret needs the admin or owner role")
	if gone, err := o.svc.Delete(ctx, o.admin, sbx.SecretScopeOrg, "TOKEN"); err != nil || gone.ID != sec.ID {
		t.Fatalf("admin removes: %+v %v", gone, err)
	}
	list, err := o.svc.List(ctx, o.member)
	if err != nil || len(list) != 1 || list[0].Name != "BY_ADMIN" {
		t.Fatalf("left: %+v %v", list, err)
	}
}

// A member's key sets, sees and removes its member's own; no other key has
// any, and a name means the member's own before the org's.
func TestMembersOwnSecrets(t *testing.T) {
	o, ctx := newOrg(t), context.Background()
	orgs, _, err := o.svc.Set(ctx, o.owner, "", "TOKEN", "the org's")
	if err != nil {
		t.Fatal(err)
	}
	own, created, err := o.svc.Set(ctx, o.member, sbx.SecretScopeUser, "TOKEN", "ada's")
	if err != nil || !created || own.UserID != o.member.User.ID || own.Scope() != sbx.SecretScopeUser {
		t.Fatalf("member sets its own: %+v %v %v", own, created, err)
	}
	_, _, err = o.svc.Set(ctx, o.project, sbx.SecretScopeUser, "TOKEN", "x")
	wantErr(t, err, sbx.EForbidden, "setting a user secret needs a member's key: a user secret is the own of the member a key acts as, and this key (scope project) acts for no member")
	_, _, err = o.svc.Set(ctx, o.owner, sbx.SecretScopeUser, "TOKEN", "x")
	wantErr(t, err, sbx.EForbidden, "this key (scope org) acts for no member")

	for _, c := range []struct {
		who  string
		c    sbx.Caller
		want int
	}{{"the member", o.member, 2}, {"another member", o.other, 1}, {"the owner", o.owner, 1}, {"a project key", o.project, 1}} {
		if list, err := o.svc.List(ctx, c.c); err != nil || len(list) != c.want {
			t.Errorf("%s lists %+v %v, want %d", c.who, list, err, c.want)
		}
	}

	_, err = o.svc.Delete(ctx, o.project, sbx.SecretScopeUser, "TOKEN")
	wantErr(t, err, sbx.EForbidden, "removing a user secret needs a member's key")
	_, err = o.svc.Delete(ctx, o.other, "", own.ID)
	wantErr(t, err, sbx.ENotFound, "")
	if gone, err := o.svc.Delete(ctx, o.member, "", "TOKEN"); err != nil || gone.ID != own.ID {
		t.Fatalf("a name means the member's own first: %+v %v", gone, err)
	}
	_, err = o.svc.Delete(ctx, o.member, sbx.SecretScopeUser, "TOKEN")
	wantErr(t, err, sbx.ENotFound, "secret TOKEN not found among this member's own")
	_, err = o.svc.Delete(ctx, o.member, "", "TOKEN") // now the org's: the member may not
	wantErr(t, err, sbx.EForbidden, "removing an org secret")
	if list, err := o.svc.List(ctx, o.owner); err != nil || len(list) != 1 || list[0].ID != orgs.ID {
		t.Fatalf("the org's is left: %+v %v", list, err)
	}
}

// Every problem with scope, name and value is one 400, before the caller's
// right to the scope is asked.
func TestSecretInput(t *testing.T) {
	o, ctx := newOrg(t), context.Background()
	_, _, err := o.svc.Set(ctx, o.member, "team", "1BAD", "")
	wantErr(t, err, sbx.EInvalid, `scope "team" must be org or user`)
	var e *sbx.Error
	errors.As(err, &e)
	var fields []string
	for _, f := range e.Fields {
		fields = append(fields, f.Field)
	}
	if strings.Join(fields, ",") != "scope,name,value" {
		t.Errorf("fields %v, want scope, name and value", fields)
	}
	_, _, err = o.svc.Set(ctx, o.member, "", "OK", "a\x00b")
	wantErr(t, err, sbx.EInvalid, "value holds a NUL byte")
	_, err = o.svc.Delete(ctx, o.owner, "team", "TOKEN")
	wantErr(t, err, sbx.EInvalid, `scope "team" must be org or user`)
}
