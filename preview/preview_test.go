package preview_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/internal/testorg"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/preview"
	"github.com/sbxdev/sbx/providertest"
)

var _ preview.Sandboxes = (*lifecycle.Manager)(nil)

// clock is testorg's stopped clock, moved on by the test.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time                       { return c.now }
func (c *clock) After(time.Duration) <-chan time.Time { return nil }

// Who opens a private preview, tried from both sides of each boundary:
// the traffic token and a link of that port open it; a key of the org, of
// the sandbox's project, or of a member of its workspace open it; another
// project's key, a member of another workspace, another org's key, a link
// of another port or sandbox, an expired or revoked link, the access token
// and nothing do not. The Memory provider runs no agent, so a caller let
// through reaches "runs no sbx agent" (501): past the policy.
func TestWhoOpensAPrivatePreview(t *testing.T) {
	o := testorg.New(t, 1_000_000_000)
	ctx := context.Background()
	c := &clock{now: testorg.T0}
	m := lifecycle.New(o.Store, []sbx.Provider{providertest.NewMemory(providertest.MemoryOptions{})},
		lifecycle.Config{DefaultProvider: providertest.MemoryName, MaxTimeout: time.Hour}, c, slog.New(slog.DiscardHandler))
	svc := preview.New(o.Store, m, c)
	create := func(caller sbx.Caller) sbx.Sandbox {
		t.Helper()
		sb, err := m.Create(ctx, caller, lifecycle.CreateRequest{TemplateID: "base", WaitReady: true})
		if err != nil {
			t.Fatal(err)
		}
		return sb
	}
	sb, other := create(o.Owner), create(o.Owner)

	ws2, p2, err := o.Store.CreateWorkspace(ctx, o.Made.Org.ID, "two", "", "", testorg.T0)
	if err != nil {
		t.Fatal(err)
	}
	inProject := o.Key(sbx.APIKey{ProjectID: o.Made.Project.ID})
	otherProject := o.Key(sbx.APIKey{ProjectID: p2.ID})
	member := o.Member(o.Made.Workspace.ID, "ada@acme.test", sbx.RoleMember)
	elsewhere := o.Member(ws2.ID, "bob@acme.test", sbx.RoleMember)
	otherOrg := testorg.New(t, 0).Owner // same IDs' shape, another ledger's org: not this one's

	link, err := svc.CreateLink(ctx, o.Owner, sb.ID, preview.LinkSpec{Port: 8080, Expires: 60})
	if err != nil {
		t.Fatal(err)
	}
	otherLink, err := svc.CreateLink(ctx, o.Owner, other.ID, preview.LinkSpec{Port: 8080})
	if err != nil {
		t.Fatal(err)
	}
	revoked, _ := svc.CreateLink(ctx, o.Owner, sb.ID, preview.LinkSpec{Port: 8080})
	if _, err := svc.RevokeLink(ctx, o.Owner, sb.ID, revoked.ID); err != nil {
		t.Fatal(err)
	}

	pass := sbx.EUnsupported // past the policy: the Memory provider runs no agent
	for _, tc := range []struct {
		name string
		cred preview.Credentials
		port int
		want sbx.Code
	}{
		{"the traffic token", preview.Credentials{Token: sb.TrafficToken()}, 8080, pass},
		{"a link of the port", preview.Credentials{Token: link.Token}, 8080, pass},
		{"the org's key", preview.Credentials{Caller: &o.Owner}, 8080, pass},
		{"a key of its project", preview.Credentials{Caller: &inProject}, 8080, pass},
		{"a member of its workspace", preview.Credentials{Caller: &member}, 8080, pass},
		{"nothing", preview.Credentials{}, 8080, sbx.EUnauthorized},
		{"the access token", preview.Credentials{Token: sb.AccessToken}, 8080, sbx.EUnauthorized},
		{"another sandbox's traffic token", preview.Credentials{Token: other.TrafficToken()}, 8080, sbx.EUnauthorized},
		{"a link of another port", preview.Credentials{Token: link.Token}, 3000, sbx.EUnauthorized},
		{"a link of another sandbox", preview.Credentials{Token: otherLink.Token}, 8080, sbx.EUnauthorized},
		{"a revoked link", preview.Credentials{Token: revoked.Token}, 8080, sbx.EUnauthorized},
		{"a link with a wrong secret", preview.Credentials{Token: "sbl_" + link.ID + "_WRONG"}, 8080, sbx.EUnauthorized},
		{"another project's key", preview.Credentials{Caller: &otherProject}, 8080, sbx.ENotFound},
		{"a member of another workspace", preview.Credentials{Caller: &elsewhere}, 8080, sbx.ENotFound},
		{"another org's key", preview.Credentials{Caller: &otherOrg}, 8080, sbx.ENotFound},
		{"port 22", preview.Credentials{Token: sb.TrafficToken()}, 22, sbx.EForbidden},
		{"port 49983", preview.Credentials{Token: sb.TrafficToken()}, 49983, sbx.EForbidden},
		{"port 0", preview.Credentials{Token: sb.TrafficToken()}, 0, sbx.EInvalid},
	} {
		a, err := svc.Open(ctx, tc.cred, sb.ProviderSandboxID, tc.port)
		if a != nil {
			a.Close()
		}
		if got := sbx.ErrorCode(err); got != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}

	// A link past its expiry; links of a sandbox another key does not reach.
	c.now = c.now.Add(2 * time.Minute)
	if _, err := svc.Open(ctx, preview.Credentials{Token: link.Token}, sb.ID, 8080); sbx.ErrorCode(err) != sbx.EUnauthorized {
		t.Errorf("an expired link: %v", err)
	}
	if _, err := svc.CreateLink(ctx, otherProject, sb.ID, preview.LinkSpec{Port: 8080}); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("another project's key makes a link: %v", err)
	}
	if _, err := svc.Links(ctx, elsewhere, sb.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("a member of another workspace lists links: %v", err)
	}
	if _, err := svc.RevokeLink(ctx, otherProject, sb.ID, link.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("another project's key revokes a link: %v", err)
	}
	if _, err := svc.RevokeLink(ctx, o.Owner, other.ID, link.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("a link revoked through another sandbox: %v", err)
	}
	for _, bad := range []preview.LinkSpec{{Port: 22}, {Port: 70000}, {Port: 8080, Expires: 8 * 24 * 3600}} {
		if _, err := svc.CreateLink(ctx, o.Owner, sb.ID, bad); sbx.ErrorCode(err) != sbx.EInvalid {
			t.Errorf("link %+v: %v", bad, err)
		}
	}

	// Public previews open to anyone; an ended sandbox's are gone.
	if _, err := m.Kill(ctx, o.Owner, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Open(ctx, preview.Credentials{Token: sb.TrafficToken()}, sb.ID, 8080); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("an ended sandbox: %v", err)
	}
	pub, err := m.Create(ctx, o.Owner, lifecycle.CreateRequest{TemplateID: "base", WaitReady: true, Preview: sbx.Preview{Public: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Open(ctx, preview.Credentials{}, pub.ID, 8080); sbx.ErrorCode(err) != pass {
		t.Errorf("a public preview: %v", err)
	}
}
