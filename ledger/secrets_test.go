package ledger_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"database/sql"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/ledger"
)

func TestSecrets(t *testing.T) { dialects(t, secrets) }

func secrets(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	made, err := s.CreateOrgWith(ctx, ledger.NewOrg{Name: "acme"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	org := made.Org
	other, _, _, _ := s.CreateOrg(ctx, "other", t0)
	ada, _, _ := s.AddMember(ctx, org.ID, "default", "ada@example.com", "", sbx.RoleMember, t0)
	bob, _, _ := s.AddMember(ctx, org.ID, "default", "bob@example.com", "", sbx.RoleMember, t0)
	cy, _, _ := s.AddMember(ctx, other.ID, "default", "cy@example.com", "", sbx.RoleMember, t0)

	// Put makes a secret, then replaces its value under the same ID.
	orgToken, created, err := s.PutSecret(ctx, org.ID, "", "TOKEN", "org-value-1", t0)
	if err != nil || !created || orgToken.ID == "" || orgToken.UserID != "" || orgToken.Scope() != "org" || !orgToken.CreatedAt.Equal(t0) {
		t.Fatalf("PutSecret: %+v %v %v", orgToken, created, err)
	}
	t1 := t0.Add(time.Minute)
	again, created, err := s.PutSecret(ctx, org.ID, "", "TOKEN", "org-value-2", t1)
	if err != nil || created || again.ID != orgToken.ID || !again.CreatedAt.Equal(t0) || !again.UpdatedAt.Equal(t1) {
		t.Fatalf("replacing a secret's value: %+v %v %v", again, created, err)
	}
	adaToken, created, err := s.PutSecret(ctx, org.ID, ada.User.ID, "TOKEN", "ada-value", t0)
	if err != nil || !created || adaToken.ID == orgToken.ID || adaToken.UserID != ada.User.ID || adaToken.Scope() != "user" {
		t.Fatalf("a member's secret by an org secret's name: %+v %v %v", adaToken, created, err)
	}
	adaOnly, _, _ := s.PutSecret(ctx, org.ID, ada.User.ID, "ADA_ONLY", "ada-only-value", t0)
	bobKey, _, _ := s.PutSecret(ctx, org.ID, bob.User.ID, "BOB_KEY", "bob-value", t0)
	otherToken, _, _ := s.PutSecret(ctx, other.ID, "", "TOKEN", "other-org-value", t0)

	// Each sees the org's secrets and their own, by name, the org's first.
	for _, c := range []struct {
		user string
		want []string
	}{
		{"", []string{orgToken.ID}},
		{ada.User.ID, []string{adaOnly.ID, orgToken.ID, adaToken.ID}},
		{bob.User.ID, []string{bobKey.ID, orgToken.ID}},
	} {
		list, err := s.Secrets(ctx, org.ID, c.user)
		if err != nil || fmt.Sprint(ids(list)) != fmt.Sprint(c.want) {
			t.Errorf("Secrets(%q) = %v %v, want %v", c.user, ids(list), err, c.want)
		}
	}
	if list, _ := s.Secrets(ctx, other.ID, ""); len(list) != 1 || list[0].ID != otherToken.ID {
		t.Errorf("another org's secrets: %+v", list)
	}

	// Bad names and values, and scopes that do not exist, are refused.
	for _, c := range []struct {
		user, name, value string
		code              sbx.Code
		detail            string
	}{
		{"", "1X", "v", sbx.EInvalid, `name "1X" must be letters, digits and '_'`},
		{"", "A-B", "v", sbx.EInvalid, `name "A-B"`},
		{"", "", "v", sbx.EInvalid, `name ""`},
		{"", strings.Repeat("A", 129), "v", sbx.EInvalid, "longer than 128 bytes"},
		{"", "X", "", sbx.EInvalid, "value is required"},
		{"", "X", strings.Repeat("v", 32<<10+1), sbx.EInvalid, "value is longer than 32768 bytes"},
		{"", "X", "a\x00b", sbx.EInvalid, "NUL"},
		{"", "1X", "", sbx.EInvalid, `name "1X" must be letters, digits and '_', not starting with a digit; value is required`},
		{cy.User.ID, "X", "v", sbx.ENotFound, "is not a member of org"},
	} {
		_, _, err := s.PutSecret(ctx, org.ID, c.user, c.name, c.value, t0)
		wantCode(t, err, c.code, c.detail)
	}
	_, _, err = s.PutSecret(ctx, "no-such-org", "", "X", "v", t0)
	wantCode(t, err, sbx.ENotFound, "org no-such-org not found")
	long, _, err := s.PutSecret(ctx, org.ID, "", strings.Repeat("A", 128), strings.Repeat("v", 32<<10), t0)
	if err != nil {
		t.Fatalf("a secret at the limits: %v", err)
	}

	// No value is readable in the database.
	raw, err := sql.Open(driver(dsn), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT name, value FROM secrets`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var name, value string
		rows.Scan(&name, &value)
		n++
		for _, plain := range []string{"org-value", "ada-value", "ada-only-value", "bob-value", "other-org-value", "vvvvvvvv"} {
			if value == "" || strings.Contains(value, plain) {
				t.Errorf("secret %s is stored as %q", name, value)
			}
		}
	}
	rows.Close()
	if n != 6 {
		t.Fatalf("%d secrets stored, want 6", n)
	}

	// SecretEnv hands out the values chosen, by name.
	env, err := s.SecretEnv(ctx, org.ID, ada.User.ID, []string{adaOnly.ID, orgToken.ID, adaOnly.ID})
	if err != nil || len(env) != 2 || env["ADA_ONLY"] != "ada-only-value" || env["TOKEN"] != "org-value-2" {
		t.Fatalf("SecretEnv: %v %v", env, err)
	}
	if env, err := s.SecretEnv(ctx, org.ID, "", nil); err != nil || env == nil || len(env) != 0 {
		t.Fatalf("SecretEnv of none: %v %v", env, err)
	}
	_, err = s.SecretEnv(ctx, org.ID, ada.User.ID, []string{adaToken.ID, orgToken.ID})
	wantCode(t, err, sbx.EInvalid, fmt.Sprintf("secrets %s and %s are both named TOKEN", adaToken.ID, orgToken.ID))
	_, err = s.SecretEnv(ctx, org.ID, bob.User.ID, []string{orgToken.ID, adaToken.ID})
	wantCode(t, err, sbx.ENotFound, "secret "+adaToken.ID+" not found")
	_, err = s.SecretEnv(ctx, org.ID, "", []string{adaOnly.ID})
	wantCode(t, err, sbx.ENotFound, "secret "+adaOnly.ID+" not found")
	_, err = s.SecretEnv(ctx, org.ID, ada.User.ID, []string{"nope", otherToken.ID, orgToken.ID})
	wantCode(t, err, sbx.ENotFound, "secrets nope, "+otherToken.ID+" not found")
	if env, err := s.SecretEnv(ctx, other.ID, "", []string{otherToken.ID}); err != nil || env["TOKEN"] != "other-org-value" {
		t.Fatalf("another org's own secret: %v %v", env, err)
	}

	// A sealed value copied into another row does not open there.
	if _, err := raw.Exec(fmt.Sprintf(`UPDATE secrets SET value = (SELECT value FROM secrets WHERE id = '%s') WHERE id = '%s'`, adaOnly.ID, bobKey.ID)); err != nil {
		t.Fatal(err)
	}
	_, err = s.SecretEnv(ctx, org.ID, bob.User.ID, []string{bobKey.ID})
	wantCode(t, err, sbx.EInternal, "does not open with this server's seal key")

	// Another key cannot open them.
	wrong, err := ledger.Open(ctx, dsn, bytes.Repeat([]byte{2}, 32))
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.SecretEnv(ctx, org.ID, "", []string{orgToken.ID})
	wrong.Close()
	wantCode(t, err, sbx.EInternal, "does not open with this server's seal key")

	// Found by ID, or by name with the member's own first.
	for _, c := range []struct {
		user, ref, want string
	}{
		{"", "TOKEN", orgToken.ID},
		{ada.User.ID, "TOKEN", adaToken.ID},
		{bob.User.ID, "TOKEN", orgToken.ID},
		{ada.User.ID, orgToken.ID, orgToken.ID},
		{ada.User.ID, adaToken.ID, adaToken.ID},
	} {
		if got, err := s.GetSecret(ctx, org.ID, c.user, c.ref); err != nil || got.ID != c.want {
			t.Errorf("GetSecret(%q, %s) = %s %v, want %s", c.user, c.ref, got.ID, err, c.want)
		}
	}
	_, err = s.GetSecret(ctx, org.ID, bob.User.ID, adaToken.ID)
	wantCode(t, err, sbx.ENotFound, "secret "+adaToken.ID+" not found among the org's secrets and this member's own")
	_, err = s.GetSecret(ctx, org.ID, "", "ADA_ONLY")
	wantCode(t, err, sbx.ENotFound, "secret ADA_ONLY not found among the org's secrets")
	_, err = s.GetSecret(ctx, other.ID, "", orgToken.ID)
	wantCode(t, err, sbx.ENotFound, "not found")

	// Delete: the member's own first, then the org's; gone is gone.
	_, err = s.DeleteSecret(ctx, org.ID, bob.User.ID, adaOnly.ID)
	wantCode(t, err, sbx.ENotFound, "not found")
	if del, err := s.DeleteSecret(ctx, org.ID, ada.User.ID, "TOKEN"); err != nil || del.ID != adaToken.ID {
		t.Fatalf("deleting ada's TOKEN: %+v %v", del, err)
	}
	if list, _ := s.Secrets(ctx, org.ID, ada.User.ID); fmt.Sprint(ids(list)) != fmt.Sprint([]string{long.ID, adaOnly.ID, orgToken.ID}) {
		t.Errorf("after deleting ada's TOKEN: %v", ids(list))
	}
	if del, err := s.DeleteSecret(ctx, org.ID, ada.User.ID, "TOKEN"); err != nil || del.ID != orgToken.ID {
		t.Fatalf("deleting TOKEN again takes the org's: %+v %v", del, err)
	}
	_, err = s.DeleteSecret(ctx, org.ID, "", orgToken.ID)
	wantCode(t, err, sbx.ENotFound, "not found")
	_, err = s.SecretEnv(ctx, org.ID, ada.User.ID, []string{orgToken.ID})
	wantCode(t, err, sbx.ENotFound, orgToken.ID)
	if _, created, err := s.PutSecret(ctx, org.ID, "", "TOKEN", "new", t1); err != nil || !created {
		t.Fatalf("a deleted name is free again: %v %v", created, err)
	}
}

// A scope holds at most sbx.MaxSecretsPerScope secrets; one full leaves the
// others alone and its values can still be replaced.
func TestSecretsPerScope(t *testing.T) { dialects(t, secretsPerScope) }

func secretsPerScope(t *testing.T, dsn string) {
	s := open(t, dsn)
	ctx := context.Background()
	org, _, _, _ := s.CreateOrg(ctx, "acme", t0)
	ada, _, _ := s.AddMember(ctx, org.ID, "default", "ada@example.com", "", sbx.RoleMember, t0)
	for i := range sbx.MaxSecretsPerScope {
		if _, _, err := s.PutSecret(ctx, org.ID, ada.User.ID, fmt.Sprintf("S%d", i), "v", t0); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := s.PutSecret(ctx, org.ID, ada.User.ID, "ONE_MORE", "v", t0)
	wantCode(t, err, sbx.EConflict, "this member has 100 secrets, the most one scope may hold")
	if _, created, err := s.PutSecret(ctx, org.ID, ada.User.ID, "S7", "w", t0); err != nil || created {
		t.Fatalf("replacing at the limit: %v %v", created, err)
	}
	if _, _, err := s.PutSecret(ctx, org.ID, "", "ONE_MORE", "v", t0); err != nil {
		t.Fatalf("the org's scope is apart from the member's: %v", err)
	}
}

func ids(list []sbx.Secret) []string {
	out := []string{}
	for _, sec := range list {
		out = append(out, sec.ID)
	}
	return out
}

// driver is the database/sql driver of dsn's dialect.
func driver(dsn string) string {
	if ledger.IsPostgres(dsn) {
		return "pgx"
	}
	return "sqlite"
}

// Migration 0008 seals again, bound to their rows, the access tokens and
// secrets an older sbx sealed without: they read the same after it.
func TestResealMigration(t *testing.T) { dialects(t, resealMigration) }

func resealMigration(t *testing.T, dsn string) {
	ctx := context.Background()
	s := open(t, dsn)
	org, ws, p, _ := s.CreateOrg(ctx, "acme", t0)
	sb := newSandbox(org, ws, p, t0)
	if err := s.InsertSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	sec, _, err := s.PutSecret(ctx, org.ID, "", "TOKEN", "org-value", t0)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	raw, err := sql.Open(driver(dsn), dsn) // as an sbx before 0008 left them
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		fmt.Sprintf(`UPDATE sandboxes SET access_token = '%s' WHERE id = '%s'`, unboundSeal(t, sb.AccessToken), sb.ID),
		fmt.Sprintf(`UPDATE secrets SET value = '%s' WHERE id = '%s'`, unboundSeal(t, "org-value"), sec.ID),
		`DELETE FROM schema_migrations WHERE version = 8`,
	} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()

	s = open(t, dsn)
	if got, err := s.GetSandbox(ctx, org.ID, sb.ID); err != nil || got.AccessToken != sb.AccessToken {
		t.Fatalf("the token after the migration: %q, %v", got.AccessToken, err)
	}
	if env, err := s.SecretEnv(ctx, org.ID, "", []string{sec.ID}); err != nil || env["TOKEN"] != "org-value" {
		t.Fatalf("the secret after the migration: %v, %v", env, err)
	}
}

// unboundSeal seals s under the tests' key as sbx did before 0008: no
// context, no prefix.
func unboundSeal(t *testing.T, s string) string {
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, _ := cipher.NewGCM(block)
	nonce := make([]byte, aead.NonceSize())
	return base64.RawStdEncoding.EncodeToString(aead.Seal(nonce, nonce, []byte(s), nil))
}
