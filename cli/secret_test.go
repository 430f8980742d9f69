package cli_test

import (
	"strings"
	"testing"
)

const secretJSON = `{"id":"sec-1","name":"TOKEN","scope":"org","created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:05Z"}`

func TestSecretCommands(t *testing.T) {
	a := newAPI(t, map[string]answer{
		"GET /api/v1/me":                                   {200, meJSON},
		"POST /api/v1/org/org-1/secrets":                   {201, secretJSON},
		"POST /api/v1/org/acme/secrets":                    {200, strings.Replace(secretJSON, `"org"`, `"user","user_id":"u-1"`, 1)},
		"GET /api/v1/org/org-1/secrets":                    {200, `{"items":[` + secretJSON + `]}`},
		"DELETE /api/v1/org/org-1/secrets/TOKEN?scope=org": {200, secretJSON},
	})
	code, out, errOut := sbxIn(t, "s3cret\r\n", "secret", "set", "TOKEN")
	if code != 0 || out != "made org secret TOKEN (sec-1)\n" {
		t.Fatalf("secret set: %d %q %q", code, out, errOut)
	}
	code, out, errOut = sbxIn(t, "", "secret", "set", "TOKEN", "--user", "--value", "line1\nline2\n", "--org", "acme")
	if code != 0 || out != "replaced the value of user secret TOKEN (sec-1)\n" {
		t.Fatalf("secret set --user --value: %d %q %q", code, out, errOut)
	}
	code, out, _ = sbx(t, "secret", "list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[1], "sec-1  TOKEN  org    2026-01-02T03:04:05Z") {
		t.Fatalf("secret list: %d\n%s", code, out)
	}
	code, out, _ = sbx(t, "secret", "rm", "TOKEN")
	if code != 0 || out != "removed org secret TOKEN (sec-1)\n" {
		t.Fatalf("secret rm: %d %q", code, out)
	}
	code, _, errOut = sbx(t, "secret", "rm", "OTHER", "--user")
	if code != 1 || !strings.Contains(errOut, "no route in the fake") {
		t.Fatalf("secret rm --user of a missing secret: %d %q", code, errOut)
	}
	wantRequests(t, a,
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "POST", Path: "/api/v1/org/org-1/secrets", Body: map[string]any{"name": "TOKEN", "value": "s3cret", "scope": "org"}},
		seen{Method: "POST", Path: "/api/v1/org/acme/secrets", Body: map[string]any{"name": "TOKEN", "value": "line1\nline2\n", "scope": "user"}},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/secrets"},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "DELETE", Path: "/api/v1/org/org-1/secrets/TOKEN", Query: "scope=org"},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "DELETE", Path: "/api/v1/org/org-1/secrets/OTHER", Query: "scope=user"},
	)
	for _, c := range []struct {
		stdin string
		args  []string
		err   string
	}{
		{"", []string{"secret", "set", "TOKEN"}, "no value for TOKEN: give it on stdin or with --value"},
		{"\n", []string{"secret", "set", "TOKEN"}, "no value for TOKEN"},
		{"v", []string{"secret", "set"}, "takes NAME"},
		{"", []string{"secret", "rm"}, "takes NAME|ID"},
	} {
		if code, _, errOut := sbxIn(t, c.stdin, c.args...); code != 2 || !strings.Contains(errOut, c.err) {
			t.Errorf("sbx %s: exit %d %q, want 2 containing %q", strings.Join(c.args, " "), code, errOut, c.err)
		}
	}
}
