package sshauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/authz"
	"github.com/sbxdev/sbx/internal/strictjson"
	"github.com/sbxdev/sbx/internal/testorg"
	"github.com/sbxdev/sbx/lifecycle"
	"github.com/sbxdev/sbx/providertest"
	"github.com/sbxdev/sbx/sshauth"
	"golang.org/x/crypto/ssh"
)

var t0 = testorg.T0

// clock is a clock the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) After(time.Duration) <-chan time.Time { return nil }

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func wantErr(t *testing.T, what string, err error, code sbx.Code, msg string) {
	t.Helper()
	var e *sbx.Error
	if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Error(), msg) {
		t.Errorf("%s: got %v, want %s saying %q", what, err, code, msg)
	}
}

// newKey makes an ed25519 key pair and answers its public half as a .pub
// file's line.
func newKey(t *testing.T, comment string) (ssh.PublicKey, string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return sp, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " " + comment
}

// fixture: org acme with workspace default (projects default and two) and
// workspace other (project other); ada is a member of default, bob of
// other, and mo an admin of default; pk is project default's key. Org x
// is beside it. A running sandbox in each project.
type fixture struct {
	ctx                    context.Context
	o                      *testorg.Org
	svc                    *sshauth.Service
	clock                  *clock
	owner, ada, bob, mo    sbx.Caller
	pk, pk2, xOwner        sbx.Caller
	def, two, oth, xProj   sbx.Project
	sbDef, sbTwo, sbOth    sbx.Sandbox
	sbX                    sbx.Sandbox
	adaKey, xKey, ownerKey sbx.SSHKey
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	o := testorg.New(t, 0)
	store, made := o.Store, o.Made
	f := &fixture{ctx: ctx, o: o, clock: &clock{now: t0}, owner: o.Owner}
	f.def = made.Project
	var err error
	if f.two, _, err = store.CreateProject(ctx, made.Org.ID, made.Workspace.ID, "two", t0); err != nil {
		t.Fatal(err)
	}
	if _, f.oth, err = store.CreateWorkspace(ctx, made.Org.ID, "other", "", "", t0); err != nil {
		t.Fatal(err)
	}
	f.ada = o.Member(made.Workspace.ID, "ada@example.com", sbx.RoleMember)
	f.mo = o.Member(made.Workspace.ID, "mo@example.com", sbx.RoleAdmin)
	f.bob = o.Member(f.oth.WorkspaceID, "bob@example.com", sbx.RoleMember)
	f.pk = o.Key(sbx.APIKey{ProjectID: f.def.ID})
	f.pk2 = o.Key(sbx.APIKey{ProjectID: f.two.ID})
	x, err := store.CreateOrgWith(ctx, sbx.NewOrg{Name: "xorg", Key: sbx.APIKey{Name: "owner"}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	f.xOwner, f.xProj = o.Auth(x.Secret), x.Project
	mgr := lifecycle.New(store, []sbx.Provider{providertest.NewMemory(providertest.MemoryOptions{})},
		lifecycle.Config{DefaultProvider: providertest.MemoryName}, f.clock, slog.New(slog.DiscardHandler))
	f.svc = sshauth.New(store, authz.Policy{Store: store}, mgr, f.clock)
	f.sbDef, f.sbTwo, f.sbOth = f.sandbox(t, f.def), f.sandbox(t, f.two), f.sandbox(t, f.oth)
	f.sbX = f.sandbox(t, f.xProj)
	return f
}

// sandbox records a running sandbox of project p.
func (f *fixture) sandbox(t *testing.T, p sbx.Project) sbx.Sandbox {
	t.Helper()
	sb := sbx.Sandbox{
		ID: uuid.NewString(), OrgID: p.OrgID, WorkspaceID: p.WorkspaceID, ProjectID: p.ID, Provider: providertest.MemoryName,
		ProviderSandboxID: "i" + uuid.NewString()[:8], Kind: sbx.KindTask, TemplateID: "base", State: sbx.StateRunning,
		CreatedAt: t0, UpdatedAt: t0, StartedAt: t0, LastSettledAt: t0, Timeout: time.Hour, ExpiresAt: t0.Add(time.Hour),
		Resources: sbx.Resources{MilliCPU: 1000, MemoryMB: 256, DiskMB: 1024}, AccessToken: "tok",
	}
	if err := f.o.Store.InsertSandbox(f.ctx, sb); err != nil {
		t.Fatal(err)
	}
	return sb
}

// Who may register which SSH key: a key its own member's or project's; an
// admin of the workspace a project's or a member's there (as it may make
// their API keys); no one beyond. Both sides of each boundary.
func TestWhoRegistersSSHKeys(t *testing.T) {
	f := newFixture(t)
	ctx, svc := f.ctx, f.svc
	_, adaPub := newKey(t, "ada@laptop")
	k, err := svc.AddKey(ctx, f.ada, sshauth.KeySpec{PublicKey: adaPub})
	if err != nil || k.Scope() != "member" || k.UserID != f.ada.User.ID || k.Name != "ada@laptop" || k.CreatedBy != f.ada.Key.ID ||
		!strings.HasPrefix(k.Fingerprint, "SHA256:") || k.Type != ssh.KeyAlgoED25519 || strings.Contains(k.PublicKey, "laptop") {
		t.Fatalf("a member registers their own key, named by its comment: %+v %v", k, err)
	}
	_, err = svc.AddKey(ctx, f.ada, sshauth.KeySpec{PublicKey: adaPub, Name: "again"})
	wantErr(t, "the same key again", err, sbx.EConflict, "registered in the org already, as ada@laptop")

	_, p := newKey(t, "")
	_, err = svc.AddKey(ctx, f.ada, sshauth.KeySpec{PublicKey: p, ProjectID: f.def.ID, Name: "proj"})
	wantErr(t, "a member, for its workspace's project", err, sbx.EForbidden, "registering an SSH key that acts as a key of project "+f.def.ID+" needs the admin or owner role")
	_, err = svc.AddKey(ctx, f.ada, sshauth.KeySpec{PublicKey: p, User: "bob@example.com", Name: "bob's"})
	wantErr(t, "a member, for another member", err, sbx.EForbidden, "needs the admin or owner role")
	_, err = svc.AddKey(ctx, f.ada, sshauth.KeySpec{PublicKey: p, User: "mo@example.com", Name: "mo's"})
	wantErr(t, "a member, for an admin", err, sbx.EForbidden, "needs the admin or owner role")

	// A project's key registers none, not even its own project's: an SSH key
	// would outlive the API key's revocation.
	_, err = svc.AddKey(ctx, f.pk, sshauth.KeySpec{PublicKey: p, Name: "deploy"})
	wantErr(t, "a project's key, for its own project", err, sbx.EForbidden, "needs the admin or owner role")
	k, err = svc.AddKey(ctx, f.mo, sshauth.KeySpec{PublicKey: p, ProjectID: f.def.ID, Name: "deploy"})
	if err != nil || k.Scope() != "project" || k.ProjectID != f.def.ID || k.UserID != "" {
		t.Fatalf("an admin registers a project's: %+v %v", k, err)
	}
	_, p2 := newKey(t, "")
	_, err = svc.AddKey(ctx, f.pk, sshauth.KeySpec{PublicKey: p2, ProjectID: f.two.ID, Name: "x"})
	wantErr(t, "a project's key, for another project", err, sbx.EForbidden, "needs the admin or owner role")
	_, err = svc.AddKey(ctx, f.pk, sshauth.KeySpec{PublicKey: p2, User: "ada@example.com", Name: "x"})
	wantErr(t, "a project's key, for a member", err, sbx.EForbidden, "needs the admin or owner role")

	k, err = svc.AddKey(ctx, f.mo, sshauth.KeySpec{PublicKey: p2, ProjectID: f.two.ID, Name: "two"})
	if err != nil || k.ProjectID != f.two.ID {
		t.Fatalf("an admin of the workspace, for a project there: %+v %v", k, err)
	}
	_, p3 := newKey(t, "")
	_, err = svc.AddKey(ctx, f.mo, sshauth.KeySpec{PublicKey: p3, ProjectID: f.oth.ID, Name: "x"})
	wantErr(t, "an admin, for a project of another workspace", err, sbx.EForbidden, "in workspace other; this key does not reach it")
	_, err = svc.AddKey(ctx, f.mo, sshauth.KeySpec{PublicKey: p3, User: "bob@example.com", Name: "x"})
	wantErr(t, "an admin, for a member of another workspace", err, sbx.EForbidden, "in workspace other; this key does not reach it")
	k, err = svc.AddKey(ctx, f.mo, sshauth.KeySpec{PublicKey: p3, User: "ada@example.com", Name: "for ada"})
	if err != nil || k.UserID != f.ada.User.ID {
		t.Fatalf("an admin, for a member of its workspace: %+v %v", k, err)
	}

	_, p4 := newKey(t, "")
	_, err = svc.AddKey(ctx, f.owner, sshauth.KeySpec{PublicKey: p4, Name: "x"})
	wantErr(t, "an org-wide key, for nobody", err, sbx.EInvalid, "an org-wide API key acts for no member")
	_, err = svc.AddKey(ctx, f.owner, sshauth.KeySpec{PublicKey: p4, ProjectID: f.xProj.ID, Name: "x"})
	wantErr(t, "an owner, for another org's project", err, sbx.ENotFound, "not found")
	_, err = svc.AddKey(ctx, f.owner, sshauth.KeySpec{PublicKey: p4, User: "nobody@example.com", Name: "x"})
	wantErr(t, "an owner, for no user", err, sbx.ENotFound, "not found")
	if k, err = svc.AddKey(ctx, f.owner, sshauth.KeySpec{PublicKey: p4, User: "bob@example.com", Name: "bob"}); err != nil || k.UserID != f.bob.User.ID {
		t.Fatalf("an owner, for any member: %+v %v", k, err)
	}
	if k, err = svc.AddKey(ctx, f.xOwner, sshauth.KeySpec{PublicKey: adaPub, ProjectID: f.xProj.ID}); err != nil || k.OrgID != f.xOwner.Org.ID {
		t.Fatalf("another org registers a key acme has: %+v %v", k, err)
	}

	// Removal: the same rule.
	list, _, err := svc.Keys(ctx, f.bob, sbx.Page{})
	if err != nil || len(list) != 5 {
		t.Fatalf("everyone in the org lists the org's %d SSH keys: %d %v", 5, len(list), err)
	}
	var adaOwn, proj, forAda sbx.SSHKey
	for _, k := range list {
		switch k.Name {
		case "ada@laptop":
			adaOwn = k
		case "deploy":
			proj = k
		case "for ada":
			forAda = k
		}
	}
	_, err = svc.RemoveKey(ctx, f.ada, proj.ID)
	wantErr(t, "a member, removing a project's", err, sbx.EForbidden, "removing an SSH key")
	_, err = svc.RemoveKey(ctx, f.bob, forAda.Fingerprint)
	wantErr(t, "another member, removing ada's", err, sbx.EForbidden, "removing an SSH key")
	_, err = svc.RemoveKey(ctx, f.xOwner, adaOwn.ID)
	wantErr(t, "another org, removing ada's", err, sbx.ENotFound, "not found")
	if _, err := svc.RemoveKey(ctx, f.ada, forAda.Fingerprint); err != nil {
		t.Errorf("a member removes their own, by fingerprint, made by an admin: %v", err)
	}
	_, err = svc.RemoveKey(ctx, f.pk, proj.ID)
	wantErr(t, "a project's key, removing its project's", err, sbx.EForbidden, "removing an SSH key")
	if _, err := svc.RemoveKey(ctx, f.mo, proj.ID); err != nil {
		t.Errorf("an admin removes a project's of its workspace: %v", err)
	}
	if _, err := svc.RemoveKey(ctx, f.mo, adaOwn.ID); err != nil {
		t.Errorf("an admin removes a member's of its workspace: %v", err)
	}
	if list, _, _ := svc.Keys(ctx, f.owner, sbx.Page{}); len(list) != 2 {
		t.Errorf("left: %d keys, want 2", len(list))
	}
}

// What a public key may be: one line of a .pub file, of an accepted type
// and strength, without options.
func TestParseKey(t *testing.T) {
	_, good := newKey(t, "a comment with spaces")
	if _, comment, err := sshauth.ParseKey(good + "\n"); err != nil || comment != "a comment with spaces" {
		t.Errorf("%q: %q %v", good, comment, err)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecPub, _ := ssh.NewPublicKey(&ec.PublicKey)
	if _, _, err := sshauth.ParseKey(string(ssh.MarshalAuthorizedKey(ecPub))); err != nil {
		t.Errorf("ecdsa: %v", err)
	}
	weak, _ := rsa.GenerateKey(rand.Reader, 1024)
	weakPub, _ := ssh.NewPublicKey(&weak.PublicKey)
	_, other := newKey(t, "")
	for _, c := range []struct{ text, want string }{
		{"", "public_key is required"},
		{"   \n", "public_key is required"},
		{"hello", "not a public key"},
		{`command="true" ` + good, "takes no authorized_keys options"},
		{good + "\n" + other, "one public key at a time"},
		{string(ssh.MarshalAuthorizedKey(weakPub)), "an RSA key of 1024 bits is too weak"},
		{strings.Repeat("x", 20000), "at most 16384 bytes"},
	} {
		_, _, err := sshauth.ParseKey(c.text)
		wantErr(t, strictjson.Short(c.text), err, sbx.EInvalid, c.want)
	}
}

// Who a public key acts for in a sandbox: the registration that reaches
// it, as an API key of its member or project would; everything else is
// the same refusal.
func TestKeysOpenWhatTheirKeysReach(t *testing.T) {
	f := newFixture(t)
	ctx, svc := f.ctx, f.svc
	ada, adaPub := newKey(t, "ada")
	proj, projPub := newKey(t, "deploy")
	stranger, _ := newKey(t, "stranger")
	mustAdd := func(c sbx.Caller, spec sshauth.KeySpec) {
		t.Helper()
		if _, err := svc.AddKey(ctx, c, spec); err != nil {
			t.Fatal(err)
		}
	}
	mustAdd(f.ada, sshauth.KeySpec{PublicKey: adaPub})
	mustAdd(f.mo, sshauth.KeySpec{PublicKey: projPub, ProjectID: f.def.ID})
	mustAdd(f.xOwner, sshauth.KeySpec{PublicKey: adaPub, ProjectID: f.xProj.ID}) // the same key, in org x

	opens := func(who string, pub ssh.PublicKey, ref string, wantOrg string) {
		t.Helper()
		c, k, err := svc.ByKey(ctx, pub, ref)
		if err != nil || c.Org.ID != wantOrg || k.OrgID != wantOrg || c.Key.ID != k.ID {
			t.Errorf("%s opens %s: %+v %+v %v", who, ref, c.Key, k, err)
		}
	}
	refused := func(who string, pub ssh.PublicKey, ref string) {
		t.Helper()
		_, _, err := svc.ByKey(ctx, pub, ref)
		wantErr(t, who+" at "+ref, err, sbx.EUnauthorized, "this credential does not open that sandbox")
	}
	acme := f.owner.Org.ID
	opens("a member's key", ada, f.sbDef.ProviderSandboxID, acme)
	opens("a member's key, by UUID", ada, f.sbDef.ID, acme)
	opens("a member's key, another project of its workspace", ada, f.sbTwo.ProviderSandboxID, acme)
	refused("a member's key, another workspace", ada, f.sbOth.ProviderSandboxID)
	opens("the same key, registered in org x", ada, f.sbX.ProviderSandboxID, f.xOwner.Org.ID)
	opens("a project's key", proj, f.sbDef.ProviderSandboxID, acme)
	refused("a project's key, another project", proj, f.sbTwo.ProviderSandboxID)
	refused("a project's key, another org", proj, f.sbX.ID)
	refused("a key registered nowhere", stranger, f.sbDef.ProviderSandboxID)
	refused("a member's key", ada, "no-such-sandbox")
	refused("a member's key", ada, "")

	// A member no longer in the org: their key stops working.
	if _, _, err := f.o.Store.RemoveMember(ctx, acme, f.o.Made.Workspace.ID, f.ada.User.ID); err != nil {
		t.Fatal(err)
	}
	refused("a removed member's key", ada, f.sbDef.ProviderSandboxID)
	opens("the same key, still registered in org x", ada, f.sbX.ProviderSandboxID, f.xOwner.Org.ID)
}

// A token opens the sandbox it was made for, as the key that made it,
// until it expires or the key is revoked; nothing else.
func TestTokensOpenOneSandboxForAWhile(t *testing.T) {
	f := newFixture(t)
	ctx, svc := f.ctx, f.svc
	tok, secret, sb, err := svc.MintToken(ctx, f.pk, f.sbDef.ProviderSandboxID, 0)
	if err != nil || sb.ID != f.sbDef.ID || tok.SandboxID != f.sbDef.ID || tok.KeyID != f.pk.Key.ID ||
		!tok.ExpiresAt.Equal(t0.Add(sshauth.DefaultTokenTTL)) || !strings.HasPrefix(secret, "sbxssh_") {
		t.Fatalf("minted: %+v %q %v", tok, secret, err)
	}
	_, _, _, err = svc.MintToken(ctx, f.pk, f.sbTwo.ProviderSandboxID, 0)
	wantErr(t, "a project's key, for another project's sandbox", err, sbx.ENotFound, "not found")
	_, _, _, err = svc.MintToken(ctx, f.bob, f.sbDef.ID, 0)
	wantErr(t, "a member of another workspace", err, sbx.ENotFound, "not found")
	_, _, _, err = svc.MintToken(ctx, f.xOwner, f.sbDef.ID, 0)
	wantErr(t, "another org", err, sbx.ENotFound, "not found")
	for _, ttl := range []time.Duration{time.Second, 2 * time.Hour} {
		_, _, _, err = svc.MintToken(ctx, f.owner, f.sbDef.ID, ttl)
		wantErr(t, "ttl "+ttl.String(), err, sbx.EInvalid, "expires_in must be from 5 to 3600 seconds")
	}

	opens := func(what, secret, ref string, want sbx.Caller) {
		t.Helper()
		c, _, err := svc.ByToken(ctx, secret, ref)
		if err != nil || c.Key.ID != want.Key.ID || c.Org.ID != want.Org.ID {
			t.Errorf("%s: %+v %v", what, c.Key, err)
		}
	}
	refused := func(what, secret, ref string) {
		t.Helper()
		_, _, err := svc.ByToken(ctx, secret, ref)
		wantErr(t, what, err, sbx.EUnauthorized, "this credential does not open that sandbox")
	}
	opens("the token, by provider ID", secret, f.sbDef.ProviderSandboxID, f.pk)
	opens("the token, by UUID", secret, f.sbDef.ID, f.pk)
	refused("the token, at another sandbox", secret, f.sbTwo.ProviderSandboxID)
	refused("the token, at another org's", secret, f.sbX.ID)
	refused("a wrong token", secret+"0", f.sbDef.ID)
	refused("an API key as a token", f.o.Made.Secret, f.sbDef.ID)
	refused("nothing", "", f.sbDef.ID)

	_, other, _, err := svc.MintToken(ctx, f.ada, f.sbDef.ID, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f.clock.add(sshauth.DefaultTokenTTL - time.Second)
	opens("just before it expires", secret, f.sbDef.ID, f.pk)
	f.clock.add(time.Second)
	refused("once it expired", secret, f.sbDef.ID)
	opens("a longer one", other, f.sbDef.ID, f.ada)
	if _, err := f.o.Store.RevokeAPIKey(ctx, f.owner.Org.ID, f.ada.Key.ID, t0); err != nil {
		t.Fatal(err)
	}
	refused("once its key is revoked", other, f.sbDef.ID)

	if _, err := f.o.Store.UpdateSandbox(ctx, f.sbOth.ID, func(s *sbx.Sandbox) ([]sbx.Event, error) {
		s.State, s.EndedAt = sbx.StateKilled, t0
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = svc.MintToken(ctx, f.owner, f.sbOth.ID, 0)
	wantErr(t, "a killed sandbox", err, sbx.EConflict, "is killed")
}
