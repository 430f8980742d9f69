package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/internal/seal"
	"github.com/sbxdev/sbx/ledger"
)

const secretsPath = "/api/v1/org/default/secrets"

// writeOnly holds values sent as secrets: no answer may carry one.
type writeOnly struct {
	s      *server
	values []string
}

// call sends a request with key that must answer want, decodes the answer
// into out, and checks that it carries no secret value.
func (o *writeOnly) call(key, method, path string, body any, want int, out any) {
	o.s.t.Helper()
	if b, ok := body.(apiv1.SetSecretRequest); ok {
		o.values = append(o.values, b.Value)
	}
	status, data := o.s.doKey(key, method, path, body)
	o.check(method+" "+path, string(data))
	if status != want {
		o.s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			o.s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// check fails when text holds a value sent as a secret.
func (o *writeOnly) check(what, text string) {
	o.s.t.Helper()
	for _, v := range o.values {
		if v != "" && strings.Contains(text, v) {
			o.s.t.Fatalf("%s shows the secret value %q:\n%s", what, v, text)
		}
	}
}

// cliAs runs the real sbx binary against s with key and stdin, and checks
// that its output carries no secret value.
func (o *writeOnly) cliAs(key, stdin string, args ...string) (string, string, int) {
	o.s.t.Helper()
	cmd := exec.Command(sbxBin, args...)
	cmd.Env = append(os.Environ(), "SBX_URL="+o.s.url, "SBX_DATA_DIR="+o.s.dataDir, "SBX_API_KEY="+key)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		o.s.t.Fatalf("sbx %s: %v", strings.Join(args, " "), err)
	}
	o.check("sbx "+strings.Join(args, " "), out.String()+errOut.String())
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// memberKey adds email to the default workspace with role and answers a key
// that acts as that member, and the member's user ID.
func (s *server) memberKey(email, role string) (string, string) {
	s.t.Helper()
	var mc apiv1.MemberChange
	s.call("POST", "/api/v1/org/default/ws/default/members", apiv1.AddMemberRequest{Email: email, Role: role}, http.StatusCreated, &mc)
	var k apiv1.CreatedKey
	s.call("POST", "/api/v1/org/default/keys", apiv1.CreateKeyRequest{Name: email, User: email}, http.StatusCreated, &k)
	return k.Secret, mc.Member.User.ID
}

func secretNames(l apiv1.SecretList) string {
	var names []string
	for _, sec := range l.Items {
		names = append(names, sec.Name+":"+sec.Scope)
	}
	return strings.Join(names, " ")
}

// Secrets over HTTP: write-only values, replace, org and user scope between
// two members of one org, every bad input a 400 naming the field, other
// orgs not found; and what the API stored opens, for a runtime's start, to
// the values sent.
func TestSecretsOverHTTP(t *testing.T) {
	s := startServer(t, serverOpts{})
	o := &writeOnly{s: s}
	owner := s.key
	ada, adaID := s.memberKey("ada@example.com", "member")
	bob, bobID := s.memberKey("bob@example.com", "admin")

	// The org's secret: made, then its value replaced under the same ID.
	var orgToken, again apiv1.Secret
	o.call(owner, "POST", secretsPath, apiv1.SetSecretRequest{Name: "TOKEN", Value: "org-token-value-1"}, http.StatusCreated, &orgToken)
	if orgToken.ID == "" || orgToken.Name != "TOKEN" || orgToken.Scope != "org" || orgToken.UserID != "" {
		t.Fatalf("made %+v", orgToken)
	}
	o.call(owner, "POST", secretsPath, apiv1.SetSecretRequest{Name: "TOKEN", Value: "org-token-value-2", Scope: "org"}, http.StatusOK, &again)
	if again.ID != orgToken.ID || !again.CreatedAt.Equal(orgToken.CreatedAt) || again.UpdatedAt.Before(orgToken.UpdatedAt) {
		t.Fatalf("replaced %+v, was %+v", again, orgToken)
	}

	// Members' own secrets, one name in three scopes.
	var adaToken, adaOnly, bobToken apiv1.Secret
	o.call(ada, "POST", secretsPath, apiv1.SetSecretRequest{Name: "TOKEN", Value: "ada-token-value", Scope: "user"}, http.StatusCreated, &adaToken)
	o.call(ada, "POST", secretsPath, apiv1.SetSecretRequest{Name: "ADA_ONLY", Value: "ada-only-value", Scope: "user"}, http.StatusCreated, &adaOnly)
	o.call(bob, "POST", secretsPath, apiv1.SetSecretRequest{Name: "TOKEN", Value: "bob-token-value", Scope: "user"}, http.StatusCreated, &bobToken)
	if adaToken.Scope != "user" || adaToken.UserID != adaID || bobToken.UserID != bobID || adaToken.ID == orgToken.ID || bobToken.ID == adaToken.ID {
		t.Fatalf("user secrets: %+v %+v", adaToken, bobToken)
	}
	for _, c := range []struct{ key, want string }{
		{owner, "TOKEN:org"},
		{ada, "ADA_ONLY:user TOKEN:org TOKEN:user"},
		{bob, "TOKEN:org TOKEN:user"},
	} {
		var l apiv1.SecretList
		o.call(c.key, "GET", secretsPath, nil, http.StatusOK, &l)
		if got := secretNames(l); got != c.want {
			t.Errorf("a key sees %q, want %q", got, c.want)
		}
	}

	// Who may set what, and bad input.
	e := s.failKey(ada, "POST", secretsPath, apiv1.SetSecretRequest{Name: "X", Value: "v"}, http.StatusForbidden, "setting an org secret needs the admin or owner role")
	if e.Type != "forbidden" {
		t.Fatalf("type %s", e.Type)
	}
	s.failKey(owner, "POST", secretsPath, apiv1.SetSecretRequest{Name: "X", Value: "v", Scope: "user"}, http.StatusForbidden,
		"setting a user secret needs a member's key")
	for _, c := range []struct {
		body   any
		fields string
		detail string
	}{
		{map[string]any{"name": "1X", "value": "v"}, "name", `name "1X" must be letters, digits and '_'`},
		{map[string]any{"name": "A-B", "value": "v"}, "name", `name "A-B"`},
		{map[string]any{"name": strings.Repeat("N", 129), "value": "v"}, "name", "longer than 128 bytes"},
		{map[string]any{"name": "X", "value": ""}, "value", "value is required"},
		{map[string]any{"name": "X"}, "value", "value is required"},
		{map[string]any{"name": "X", "value": strings.Repeat("v", 32<<10+1)}, "value", "value is longer than 32768 bytes"},
		{map[string]any{"name": "X", "value": "a\x00b"}, "value", "NUL"},
		{map[string]any{"name": "X", "value": "v", "scope": "team"}, "scope", `scope "team" must be org or user`},
		{map[string]any{"name": "1X", "value": "", "scope": "team"}, "scope name value", `scope "team"`},
		{map[string]any{"name": "X", "value": "v", "values": "w"}, "values", `unknown field "values"`},
		{`{"name": "X", "value": 1}`, "value", `field "value" must be a string`},
	} {
		e := s.failKey(owner, "POST", secretsPath, c.body, http.StatusBadRequest, c.detail)
		var fields []string
		for _, f := range e.Errors {
			fields = append(fields, f.Field)
		}
		if strings.Join(fields, " ") != c.fields {
			t.Errorf("%v: fields %v, want %s", c.body, fields, c.fields)
		}
	}

	// What the API stored opens to the values sent, for a runtime's start.
	store := s.openLedger(t)
	org, _ := store.GetOrg(context.Background(), "default")
	env, err := store.SecretEnv(context.Background(), org.ID, adaID, []string{orgToken.ID, adaOnly.ID})
	if err != nil || len(env) != 2 || env["TOKEN"] != "org-token-value-2" || env["ADA_ONLY"] != "ada-only-value" {
		t.Errorf("SecretEnv: %v %v", env, err)
	}
	if _, err := store.SecretEnv(context.Background(), org.ID, bobID, []string{adaOnly.ID}); sbx.ErrorCode(err) != sbx.ENotFound {
		t.Errorf("bob's start with ada's secret: %v", err)
	}
	store.Close()

	// Delete: an ID or a name, the member's own before the org's unless
	// ?scope= says which; nobody removes what they may not.
	s.failKey(bob, "DELETE", secretsPath+"/"+adaOnly.ID, nil, http.StatusNotFound, "secret "+adaOnly.ID+" not found")
	s.failKey(ada, "DELETE", secretsPath+"/TOKEN?scope=org", nil, http.StatusForbidden, "removing an org secret needs the admin or owner role")
	s.failKey(ada, "DELETE", secretsPath+"/TOKEN?scope=all", nil, http.StatusBadRequest, `scope "all" must be org or user`)
	s.failKey(ada, "DELETE", secretsPath+"/TOKEN?force=1", nil, http.StatusBadRequest, `unknown query parameter "force"`)
	var gone apiv1.Secret
	o.call(ada, "DELETE", secretsPath+"/TOKEN", nil, http.StatusOK, &gone)
	if gone.ID != adaToken.ID {
		t.Fatalf("ada's TOKEN first: removed %+v", gone)
	}
	s.failKey(ada, "DELETE", secretsPath+"/TOKEN", nil, http.StatusForbidden, "removing an org secret needs the admin or owner role")
	s.failKey(ada, "DELETE", secretsPath+"/TOKEN?scope=user", nil, http.StatusNotFound, "secret TOKEN not found among this member's own")
	o.call(ada, "DELETE", secretsPath+"/"+adaOnly.ID+"?scope=user", nil, http.StatusOK, &gone)
	o.call(bob, "DELETE", secretsPath+"/TOKEN?scope=org", nil, http.StatusOK, &gone)
	if gone.ID != orgToken.ID {
		t.Fatalf("bob removed %+v, want the org's TOKEN", gone)
	}
	o.call(bob, "DELETE", secretsPath+"/TOKEN", nil, http.StatusOK, &gone)
	if gone.ID != bobToken.ID {
		t.Fatalf("bob removed %+v, want his own TOKEN", gone)
	}
	s.failKey(owner, "DELETE", secretsPath+"/"+orgToken.ID, nil, http.StatusNotFound, "not found")
	for _, key := range []string{owner, ada, bob} {
		var l apiv1.SecretList
		o.call(key, "GET", secretsPath, nil, http.StatusOK, &l)
		if len(l.Items) != 0 {
			t.Errorf("left after removing all: %+v", l.Items)
		}
	}

	// Another org's key finds no such org.
	other := s.otherOrgKey(t)
	s.failKey(other, "GET", secretsPath, nil, http.StatusNotFound, "org default not found")
	s.failKey(other, "POST", secretsPath, apiv1.SetSecretRequest{Name: "X", Value: "v"}, http.StatusNotFound, "org default not found")
	s.failKey(other, "DELETE", secretsPath+"/"+bobToken.ID, nil, http.StatusNotFound, "org default not found")
	var l apiv1.SecretList
	o.call(other, "GET", "/api/v1/org/other/secrets", nil, http.StatusOK, &l)
	if len(l.Items) != 0 {
		t.Errorf("another org sees %+v", l.Items)
	}
}

// sbx secret over a real serve: the value from stdin or --value, never
// printed; list, replace, remove; a member's own with --user; refusals.
func TestSecretCLI(t *testing.T) {
	s := startServer(t, serverOpts{})
	o := &writeOnly{s: s, values: []string{"cli-value-from-stdin", "cli-value-from-flag", "ada-cli-value"}}
	ada, _ := s.memberKey("ada@example.com", "member")

	out, errOut, code := o.cliAs(s.key, "cli-value-from-stdin\n", "secret", "set", "CLI_TOKEN")
	if code != 0 || !strings.HasPrefix(out, "made org secret CLI_TOKEN (") {
		t.Fatalf("secret set from stdin: exit %d %q %q", code, out, errOut)
	}
	if out, _, code = o.cliAs(s.key, "", "secret", "set", "CLI_TOKEN", "--value", "cli-value-from-flag", "--json"); code != 0 || !strings.Contains(out, `"scope": "org"`) {
		t.Fatalf("secret set --value --json: exit %d %q", code, out)
	}
	if out, _, code = o.cliAs(ada, "ada-cli-value", "secret", "set", "ADA_TOKEN", "--user"); code != 0 || !strings.HasPrefix(out, "made user secret ADA_TOKEN (") {
		t.Fatalf("secret set --user: exit %d %q", code, out)
	}
	list, _, _ := o.cliAs(ada, "", "secret", "list")
	if lines := strings.Split(strings.TrimSpace(list), "\n"); len(lines) != 3 || !strings.Contains(lines[1], "ADA_TOKEN  user") || !strings.Contains(lines[2], "CLI_TOKEN  org") {
		t.Fatalf("secret list as ada:\n%s", list)
	}
	if list, _, _ := o.cliAs(s.key, "", "secret", "list", "--json"); strings.Contains(list, "ADA_TOKEN") || !strings.Contains(list, "CLI_TOKEN") {
		t.Fatalf("secret list --json as the owner:\n%s", list)
	}

	// What the server stored is the value without the newline stdin ended with.
	store := s.openLedger(t)
	org, _ := store.GetOrg(context.Background(), "default")
	secs, _ := store.Secrets(context.Background(), org.ID, "")
	env, err := store.SecretEnv(context.Background(), org.ID, "", []string{secs[0].ID})
	store.Close()
	if err != nil || env["CLI_TOKEN"] != "cli-value-from-flag" {
		t.Fatalf("stored: %v %v", env, err)
	}

	for _, c := range []struct {
		key, stdin string
		args       []string
		code       int
		err        string
	}{
		{s.key, "", []string{"secret", "set", "EMPTY"}, 2, "no value for EMPTY: give it on stdin or with --value"},
		{s.key, "v", []string{"secret", "set", "1X"}, 1, `name "1X" must be letters, digits and '_'`},
		{s.key, "v", []string{"secret", "set", "X", "--user"}, 1, "setting a user secret needs a member's key"},
		{ada, "v", []string{"secret", "set", "X"}, 1, "setting an org secret needs the admin or owner role"},
		{ada, "", []string{"secret", "rm", "CLI_TOKEN"}, 1, "removing an org secret needs the admin or owner role"},
		{ada, "", []string{"secret", "rm", "ADA_TOKEN"}, 1, "secret ADA_TOKEN not found among the org's secrets (your own secrets need --user)"},
		{s.key, "", []string{"secret", "rm"}, 2, "takes NAME|ID"},
	} {
		if _, errOut, code := o.cliAs(c.key, c.stdin, c.args...); code != c.code || !strings.Contains(errOut, c.err) {
			t.Errorf("sbx %s: exit %d, stderr %q; want exit %d containing %q", strings.Join(c.args, " "), code, errOut, c.code, c.err)
		}
	}
	if out, _, code := o.cliAs(ada, "", "secret", "rm", "ADA_TOKEN", "--user"); code != 0 || !strings.HasPrefix(out, "removed user secret ADA_TOKEN (") {
		t.Fatalf("secret rm --user: exit %d %q", code, out)
	}
	if out, _, code := o.cliAs(s.key, "", "secret", "rm", "CLI_TOKEN"); code != 0 || !strings.HasPrefix(out, "removed org secret CLI_TOKEN (") {
		t.Fatalf("secret rm: exit %d %q", code, out)
	}
	if list, _, _ := o.cliAs(ada, "", "secret", "list"); strings.Count(list, "\n") != 1 {
		t.Fatalf("secret list after rm:\n%s", list)
	}
}

// serve --seal-key-file seals with the operator's key, and makes no key of
// its own; a file of the wrong size, or none, stops serve with a clear error.
func TestSealKeyFile(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "seal")
	raw := make([]byte, 32)
	rand.Read(raw)
	if err := os.WriteFile(keyFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, serverOpts{args: []string{"--seal-key-file", keyFile}})
	var sec apiv1.Secret
	s.call("POST", secretsPath, apiv1.SetSecretRequest{Name: "TOKEN", Value: "sealed-with-the-operator-key"}, http.StatusCreated, &sec)
	if _, err := os.Stat(filepath.Join(s.dataDir, "seal.key")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("serve made a seal.key of its own: %v", err)
	}
	key, err := seal.LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	store, err := ledger.Open(context.Background(), filepath.Join(s.dataDir, "ledger.db"), key)
	if err != nil {
		t.Fatal(err)
	}
	org, _ := store.GetOrg(context.Background(), "default")
	env, err := store.SecretEnv(context.Background(), org.ID, "", []string{sec.ID})
	store.Close()
	if err != nil || env["TOKEN"] != "sealed-with-the-operator-key" {
		t.Fatalf("SecretEnv with the operator's key: %v %v", env, err)
	}

	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte(strings.Repeat("k", 32)+"\n"), 0o600)
	for _, c := range []struct {
		env, want string
	}{
		{short, "want exactly 32 bytes (raw, not hex or base64, no newline), have 33"},
		{filepath.Join(t.TempDir(), "missing"), "seal key: open "},
	} {
		cmd := exec.Command(sbxBin, "serve", "--data-dir", t.TempDir(), "--listen", freeAddr(t), "--provider", "none") // no host resources, should it start
		cmd.Env = append(os.Environ(), "SBX_SEAL_KEY_FILE="+c.env)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("serve with $SBX_SEAL_KEY_FILE=%s: %v\n%s\nwant it to stop saying %q", c.env, err, out, c.want)
		}
	}
}

// openLedger opens the running server's SQLite ledger with its seal key.
func (s *server) openLedger(t *testing.T) *ledger.Store {
	t.Helper()
	key, err := seal.LoadKey(filepath.Join(s.dataDir, "seal.key"))
	if err != nil {
		t.Fatal(err)
	}
	store, err := ledger.Open(context.Background(), filepath.Join(s.dataDir, "ledger.db"), key)
	if err != nil {
		t.Fatal(err)
	}
	return store
}
