package ledger_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

func TestSSHKeysAndTokens(t *testing.T) { dialects(t, sshKeysAndTokens) }

func sshKeysAndTokens(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	made, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme", Key: sbx.APIKey{Name: "owner"}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	org, project := made.Org, made.Project
	other, _, otherProject, _ := s.CreateOrg(ctx, "other", t0)
	ada, _, _ := s.AddMember(ctx, org.ID, "default", "ada@example.com", "", sbx.RoleMember, t0)
	owner, err := s.Authenticate(ctx, made.Secret)
	if err != nil {
		t.Fatal(err)
	}
	key := func(n int, user, project string) sbx.SSHKey {
		return sbx.SSHKey{OrgID: org.ID, UserID: user, ProjectID: project, Name: fmt.Sprint("k", n), Type: "ssh-ed25519",
			Fingerprint: fmt.Sprint("SHA256:fp", n), PublicKey: fmt.Sprint("ssh-ed25519 AAAA", n), CreatedBy: owner.Key.ID}
	}

	adaKey, err := s.CreateSSHKey(ctx, key(1, ada.User.ID, ""), t0)
	if err != nil || adaKey.ID == "" || !adaKey.CreatedAt.Equal(t0) || adaKey.Scope() != "member" {
		t.Fatalf("a member's key: %+v %v", adaKey, err)
	}
	projKey, err := s.CreateSSHKey(ctx, key(2, "", project.ID), t0.Add(time.Second))
	if err != nil || projKey.Scope() != "project" {
		t.Fatalf("a project's key: %+v %v", projKey, err)
	}
	for _, c := range []struct {
		what string
		k    sbx.SSHKey
		code sbx.Code
		msg  string
	}{
		{"the same key in the org", key(1, "", project.ID), sbx.EConflict, "registered in the org already, as k1 (" + adaKey.ID + ")"},
		{"both a member's and a project's", key(3, ada.User.ID, project.ID), sbx.EInvalid, "one of them"},
		{"neither", key(3, "", ""), sbx.EInvalid, "one of them"},
		{"another org's project", key(3, "", otherProject.ID), sbx.ENotFound, "project " + otherProject.ID + " not found"},
		{"a user of no workspace of the org", key(3, uuid.NewString(), ""), sbx.ENotFound, "is not a member of this org"},
	} {
		_, err := s.CreateSSHKey(ctx, c.k, t0)
		if sbx.ErrorCode(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %s saying %q", c.what, err, c.code, c.msg)
		}
	}
	inOther := key(1, "", otherProject.ID)
	inOther.OrgID = other.ID
	if _, err := s.CreateSSHKey(ctx, inOther, t0); err != nil {
		t.Errorf("the same key in another org: %v", err)
	}
	byFP, err := s.SSHKeysByFingerprint(ctx, "SHA256:fp1")
	if err != nil || len(byFP) != 2 || byFP[0].OrgID == byFP[1].OrgID || byFP[0].PublicKey != "ssh-ed25519 AAAA1" {
		t.Errorf("by fingerprint: %+v %v", byFP, err)
	}

	// Pages, oldest first; the limit per member.
	for n := 10; n < 10+sbx.MaxSSHKeysPerScope-1; n++ {
		if _, err := s.CreateSSHKey(ctx, key(n, ada.User.ID, ""), t0.Add(time.Duration(n)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.CreateSSHKey(ctx, key(999, ada.User.ID, ""), t0)
	if sbx.ErrorCode(err) != sbx.EConflict || !strings.Contains(err.Error(), "this member has 100 SSH keys") {
		t.Errorf("beyond the limit: %v", err)
	}
	var all []sbx.SSHKey
	for cursor := ""; ; {
		page, next, err := s.SSHKeys(ctx, org.ID, sbx.Page{Limit: 30, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if len(all) != sbx.MaxSSHKeysPerScope+1 || all[0].ID != adaKey.ID || all[1].ID != projKey.ID {
		t.Errorf("pages: %d keys, first %s %s", len(all), all[0].Name, all[1].Name)
	}

	if got, err := s.GetSSHKey(ctx, org.ID, "SHA256:fp2"); err != nil || got.ID != projKey.ID {
		t.Errorf("by fingerprint in the org: %+v %v", got, err)
	}
	if _, err := s.GetSSHKey(ctx, other.ID, projKey.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("another org's key: %v", err)
	}
	if gone, err := s.DeleteSSHKey(ctx, org.ID, projKey.ID); err != nil || gone.ID != projKey.ID {
		t.Errorf("delete: %+v %v", gone, err)
	}
	if _, err := s.DeleteSSHKey(ctx, org.ID, projKey.ID); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("delete again: %v", err)
	}

	// CallerOf: as Authenticate answers for a key found otherwise.
	adaCaller, err := s.CallerOf(ctx, adaKey.Acts())
	if err != nil || adaCaller.User.ID != ada.User.ID || adaCaller.Role != sbx.RoleMember || adaCaller.Key.ID != adaKey.ID || adaCaller.Org.ID != org.ID {
		t.Errorf("CallerOf a member's SSH key: %+v %v", adaCaller, err)
	}
	if c, err := s.CallerOf(ctx, projKey.Acts()); err != nil || c.Project.ID != project.ID || c.Role != sbx.RoleMember || c.OrgWide() {
		t.Errorf("CallerOf a project's SSH key: %+v %v", c, err)
	}
	if _, _, err := s.RemoveMember(ctx, org.ID, "default", ada.User.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallerOf(ctx, adaKey.Acts()); sbx.ErrorCode(err) != sbx.EUnauthorized {
		t.Errorf("CallerOf a removed member's key: %v", err)
	}

	// Tokens: hashed, found by secret; old expired ones removed.
	sb := sbx.Sandbox{ID: uuid.NewString(), OrgID: org.ID, WorkspaceID: made.Workspace.ID, ProjectID: project.ID, Provider: "memory",
		ProviderSandboxID: "i" + uuid.NewString()[:8], Kind: sbx.KindTask, TemplateID: "base", State: sbx.StateRunning,
		CreatedAt: t0, UpdatedAt: t0, StartedAt: t0, LastSettledAt: t0, Timeout: time.Hour, ExpiresAt: t0.Add(time.Hour)}
	if err := s.InsertSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	old, oldSecret, err := s.CreateSSHToken(ctx, sbx.SSHToken{OrgID: org.ID, SandboxID: sb.ID, KeyID: owner.Key.ID, ExpiresAt: t0.Add(time.Minute)}, t0)
	if err != nil || !strings.HasPrefix(oldSecret, ledger.SSHTokenPrefix) {
		t.Fatalf("token: %+v %q %v", old, oldSecret, err)
	}
	got, err := s.SSHToken(ctx, oldSecret)
	if err != nil || got.ID != old.ID || got.SandboxID != sb.ID || got.KeyID != owner.Key.ID || !got.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("SSHToken: %+v %v", got, err)
	}
	for _, bad := range []string{"", oldSecret + "0", made.Secret, ledger.SSHTokenPrefix} {
		if _, err := s.SSHToken(ctx, bad); sbx.ErrorCode(err) != sbx.EUnauthorized {
			t.Errorf("SSHToken(%q): %v", bad, err)
		}
	}
	later := t0.Add(25 * time.Hour)
	if _, _, err := s.CreateSSHToken(ctx, sbx.SSHToken{OrgID: org.ID, SandboxID: sb.ID, KeyID: owner.Key.ID, ExpiresAt: later.Add(time.Minute)}, later); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SSHToken(ctx, oldSecret); sbx.ErrorCode(err) != sbx.EUnauthorized {
		t.Errorf("a token expired a day before a new one is made is removed: %v", err)
	}
}
