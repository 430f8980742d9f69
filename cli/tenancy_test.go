package cli_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const meJSON = `{"org":{"id":"org-1","name":"acme"},"workspace":{"id":"ws-1","name":"default"},"project":{"id":"p-1","name":"default"},
	"key":{"id":"k","name":"admin","prefix":"sbx_ab","scope":"org"},"role":"owner"}`

// wantRequests checks the method, path and body of what the fake saw, in order.
func wantRequests(t *testing.T, a *api, want ...seen) {
	t.Helper()
	got := a.requests()
	if len(got) != len(want) {
		t.Fatalf("requests %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Method != w.Method || g.Path != w.Path || g.Query != w.Query || !reflect.DeepEqual(g.Body, w.Body) {
			t.Errorf("request %d = %s %s?%s %v, want %s %s?%s %v", i, g.Method, g.Path, g.Query, g.Body, w.Method, w.Path, w.Query, w.Body)
		}
	}
}

func TestOrgCommands(t *testing.T) {
	org := `{"id":"org-2","name":"acme","kyc_status":"verified","plan":{"name":"","max_sandboxes":2,"max_vcpu":1.5,"max_memory_mb":0,
		"max_gpu_percent":0,"max_disk_mb":10240,"max_members_per_workspace":0,"max_timeout":3600},"created_at":"2026-01-02T03:04:05Z"}`
	a := newAPI(t, map[string]answer{
		"POST /api/v1/admin/orgs": {201, `{"org":` + org + `,"workspace":{"id":"ws-2","name":"default"},"project":{"id":"p-2","name":"default","workspace_id":"ws-2"},
			"key":{"id":"key-2","name":"owner","prefix":"sbx_12","scope":"org"},"secret":"sbx_secret"}`},
		"GET /api/v1/admin/orgs":                               {200, `{"items":[` + org + `]}`},
		"PUT /api/v1/admin/orgs/acme/plan":                     {200, `{"org":` + org + `,"paused":["i1","i2"],"resumed":[]}`},
		"PUT /api/v1/admin/orgs/acme/verification":             {200, org},
		"PUT /api/v1/admin/users/ada@example.com/verification": {200, `{"id":"u-1","email":"ada@example.com","kyc_status":"pending"}`},
	})
	code, out, errOut := sbx(t, "org", "create", "acme", "--verification", "verified", "--max-sandboxes", "2", "--max-vcpu", "1.5", "--max-timeout", "1h")
	if code != 0 || !strings.HasPrefix(out, "sbx_secret\n") || !strings.Contains(out, "2 sandboxes, 1.5 vCPU, 10240 MB disk, 1h0m0s timeout") {
		t.Fatalf("org create: %d %q %q", code, out, errOut)
	}
	code, out, _ = sbx(t, "org", "list")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 2 || !strings.Contains(lines[1], "org-2  acme  verified") {
		t.Fatalf("org list: %d\n%s", code, out)
	}
	code, out, _ = sbx(t, "org", "plan", "acme", "--max-members", "1", "--max-disk-mb", "20480")
	if code != 0 || !strings.Contains(out, "paused (member_limit_exceeded): i1 i2") {
		t.Fatalf("org plan: %d %q", code, out)
	}
	code, out, _ = sbx(t, "org", "verify", "acme")
	if code != 0 || out != "org acme (org-2) is verified\n" {
		t.Fatalf("org verify: %d %q", code, out)
	}
	code, out, _ = sbx(t, "org", "verify", "--user", "ada@example.com", "--status", "pending")
	if code != 0 || out != "user ada@example.com (u-1) is pending\n" {
		t.Fatalf("org verify --user: %d %q", code, out)
	}
	wantRequests(t, a,
		seen{Method: "POST", Path: "/api/v1/admin/orgs", Body: map[string]any{"name": "acme", "kyc_status": "verified",
			"plan": map[string]any{"max_sandboxes": 2.0, "max_vcpu": 1.5, "max_timeout": 3600.0}}},
		seen{Method: "GET", Path: "/api/v1/admin/orgs"},
		seen{Method: "PUT", Path: "/api/v1/admin/orgs/acme/plan", Body: map[string]any{"max_members_per_workspace": 1.0, "max_disk_mb": 20480.0}},
		seen{Method: "PUT", Path: "/api/v1/admin/orgs/acme/verification", Body: map[string]any{"status": "verified"}},
		seen{Method: "PUT", Path: "/api/v1/admin/users/ada@example.com/verification", Body: map[string]any{"status": "pending"}},
	)
	for _, bad := range [][]string{{"org", "verify"}, {"org", "verify", "acme", "--user", "x"}, {"org", "plan"}, {"org", "nope"}} {
		if code, _, _ := sbx(t, bad...); code != 2 {
			t.Errorf("sbx %s: exit %d, want 2", strings.Join(bad, " "), code)
		}
	}
}

func TestWorkspaceAndProjectCommands(t *testing.T) {
	a := newAPI(t, map[string]answer{
		"GET /api/v1/me":                            {200, meJSON},
		"POST /api/v1/org/org-1/workspaces":         {201, `{"id":"ws-9","name":"research","created_at":"2026-01-02T03:04:05Z"}`},
		"GET /api/v1/org/org-1/workspaces":          {200, `{"items":[{"id":"ws-1","name":"default","created_at":"2026-01-02T03:04:05Z"}]}`},
		"GET /api/v1/org/acme/ws/research/projects": {200, `{"items":[{"id":"p-1","name":"default","workspace_id":"ws-9","runtime_id":"rt-1","created_at":"2026-01-02T03:04:05Z"}]}`},
		"POST /api/v1/org/org-1/ws/ws-1/projects":   {201, `{"id":"p-7","name":"evals","workspace_id":"ws-1","created_at":"2026-01-02T03:04:05Z"}`},
	})
	if code, out, errOut := sbx(t, "workspace", "create", "research"); code != 0 || out != "ws-9\n" {
		t.Fatalf("workspace create: %d %q %q", code, out, errOut)
	}
	if code, out, _ := sbx(t, "ws", "list"); code != 0 || !strings.Contains(out, "ws-1  default") {
		t.Fatalf("workspace list: %d %q", code, out)
	}
	if code, out, _ := sbx(t, "project", "list", "--org", "acme", "-w", "research"); code != 0 || !strings.Contains(out, "p-1  default  rt-1") {
		t.Fatalf("project list: %d %q", code, out)
	}
	if code, out, _ := sbx(t, "project", "create", "evals"); code != 0 || out != "p-7\n" {
		t.Fatalf("project create: %d %q", code, out)
	}
	wantRequests(t, a,
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "POST", Path: "/api/v1/org/org-1/workspaces", Body: map[string]any{"name": "research"}},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "GET", Path: "/api/v1/org/org-1/workspaces"},
		seen{Method: "GET", Path: "/api/v1/org/acme/ws/research/projects"},
		seen{Method: "GET", Path: "/api/v1/me"},
		seen{Method: "POST", Path: "/api/v1/org/org-1/ws/ws-1/projects", Body: map[string]any{"name": "evals"}},
	)
	// Another org's workspace must be named.
	if code, _, errOut := sbx(t, "project", "list", "--org", "other"); code != 2 || !strings.Contains(errOut, "name the workspace with --workspace") {
		t.Fatalf("another org without --workspace: %d %q", code, errOut)
	}
}

func TestMemberCommands(t *testing.T) {
	change := `{"member":{"user":{"id":"u-1","email":"ada@example.com","kyc_status":"unverified","created_at":"2026-01-02T03:04:05Z"},
		"role":"admin","workspace_id":"ws-1","created_at":"2026-01-02T03:04:05Z"},"members":3,"member_limit":2,"paused":["i1"],"resumed":[]}`
	a := newAPI(t, map[string]answer{
		"GET /api/v1/me":                                           {200, meJSON},
		"POST /api/v1/org/org-1/ws/ws-1/members":                   {201, change},
		"GET /api/v1/org/org-1/ws/ws-1/members":                    {200, `{"items":[` + strings.Split(strings.SplitN(change, `"member":`, 2)[1], `,"members"`)[0] + `]}`},
		"DELETE /api/v1/org/org-1/ws/ws-1/members/ada@example.com": {200, strings.Replace(strings.Replace(change, `"paused":["i1"]`, `"paused":[]`, 1), `"resumed":[]`, `"resumed":["i1"]`, 1)},
	})
	code, out, errOut := sbx(t, "member", "add", "ada@example.com", "--role", "admin", "--name", "Ada")
	if code != 0 || !strings.Contains(out, "added ada@example.com (admin): workspace has 3 member(s), the plan allows 2") ||
		!strings.Contains(out, "paused (member_limit_exceeded) until members are removed: i1") {
		t.Fatalf("member add: %d %q %q", code, out, errOut)
	}
	if code, out, _ := sbx(t, "member", "list"); code != 0 || !strings.Contains(out, "u-1      ada@example.com  -     admin  unverified") {
		t.Fatalf("member list: %d %q", code, out)
	}
	if code, out, _ := sbx(t, "member", "rm", "ada@example.com"); code != 0 || !strings.Contains(out, "resumed: i1") {
		t.Fatalf("member rm: %d %q", code, out)
	}
	got := a.requests()
	if len(got) != 6 || !reflect.DeepEqual(got[1].Body, map[string]any{"email": "ada@example.com", "role": "admin", "name": "Ada"}) {
		t.Fatalf("requests %+v", got)
	}
}

func TestKeyCommands(t *testing.T) {
	key := `{"id":"k-1","name":"ci","prefix":"sbx_ab12","scope":"project","project_id":"p-1","created_at":"2026-01-02T03:04:05Z"}`
	a := newAPI(t, map[string]answer{
		"GET /api/v1/me":                   {200, meJSON},
		"POST /api/v1/org/org-1/keys":      {201, `{"key":` + key + `,"secret":"sbx_new_secret"}`},
		"GET /api/v1/org/acme/keys":        {200, `{"items":[` + key + `]}`},
		"DELETE /api/v1/org/acme/keys/k-1": {200, strings.Replace(key, `}`, `,"revoked_at":"2026-01-02T04:00:00Z"}`, 1)},
		"POST /api/v1/org/acme/keys":       {403, `{"code":403,"type":"forbidden","detail":"making an org-wide key (one that acts as an owner) needs the owner role; this key acts as admin","errors":[]}`},
	})
	code, out, _ := sbx(t, "key", "create", "ci", "--project-id", "p-1")
	if code != 0 || !strings.HasPrefix(out, "sbx_new_secret\n") || !strings.Contains(out, "shown this once") {
		t.Fatalf("key create: %d %q", code, out)
	}
	if code, out, _ := sbx(t, "key", "list", "--org", "acme"); code != 0 || !strings.Contains(out, "k-1  ci    sbx_ab12  project  p-1") {
		t.Fatalf("key list: %d %q", code, out)
	}
	if code, out, _ := sbx(t, "key", "revoke", "k-1", "--org", "acme"); code != 0 || out != "revoked key k-1 (ci, sbx_ab12…) at 2026-01-02T04:00:00Z\n" {
		t.Fatalf("key revoke: %d %q", code, out)
	}
	code, _, errOut := sbx(t, "key", "create", "root", "--org", "acme")
	if code != 1 || !strings.Contains(errOut, "needs the owner role; this key acts as admin") {
		t.Fatalf("a refused key: %d %q", code, errOut)
	}
	if code, _, _ := sbx(t, "key", "create", "x", "--user", "u", "--project-id", "p"); code != 2 {
		t.Fatalf("a member's and a project's key at once: exit %d", code)
	}
	got := a.requests()
	if len(got) != 5 || !reflect.DeepEqual(got[1].Body, map[string]any{"name": "ci", "project_id": "p-1"}) {
		t.Fatalf("requests %+v", got)
	}
	// --json prints the answer as the API gave it.
	code, out, _ = sbx(t, "--json", "key", "create", "ci", "--project-id", "p-1")
	var created struct {
		Secret string `json:"secret"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Secret != "sbx_new_secret" {
		t.Fatalf("--json: %d %q", code, out)
	}
}

func TestServeKYCFlag(t *testing.T) {
	// Should the check fail to refuse, serve stops at once anyway: no local
	// provider to set up, an address it cannot listen on.
	safe := []string{"serve", "--data-dir", t.TempDir(), "--provider", "none", "--listen", "256.0.0.1:1"}
	if code, _, errOut := sbx(t, append(safe, "--kyc", "maybe")...); code == 0 || !strings.Contains(errOut, `"maybe": want on or off`) {
		t.Fatalf("--kyc maybe: %d %q", code, errOut)
	}
	t.Setenv("SBX_KYC", "sometimes")
	if code, _, errOut := sbx(t, safe...); code != 2 || !strings.Contains(errOut, `$SBX_KYC="sometimes": want on or off`) {
		t.Fatalf("$SBX_KYC=sometimes: %d %q", code, errOut)
	}
}
