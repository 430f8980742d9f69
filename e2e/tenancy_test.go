package e2e

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sbxdev/sbx/apiv1"
	"github.com/sbxdev/sbx/httpapi"
)

// callKey is call with another key than the server's admin key.
func (s *server) callKey(key, method, path string, body any, want int, out any) {
	s.t.Helper()
	status, data := s.doKey(key, method, path, body)
	if status != want {
		s.t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, data)
	}
	if out != nil {
		reflect.ValueOf(out).Elem().SetZero()
		if err := json.Unmarshal(data, out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

// webhook sends a KYC event signed with secret at t.
func (s *server) webhook(secret string, t time.Time, ev apiv1.KYCEvent) (int, []byte) {
	s.t.Helper()
	body, _ := json.Marshal(ev)
	req, err := http.NewRequest("POST", s.url+"/api/v1/kyc/webhook", strings.NewReader(string(body)))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpapi.SignatureHeader, httpapi.SignWebhook(secret, t, body))
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out json.RawMessage
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// Orgs, plans, verification, workspaces, projects, members and keys over a
// real serve, with the KYC gate on (the default) and the webhook configured.
func TestTenancyOverServe(t *testing.T) {
	const secret = "whsec_e2e"
	s := startServer(t, serverOpts{args: []string{"--kyc-webhook-secret", secret}})

	// The operator makes an org; unverified, it may not create sandboxes.
	var acme apiv1.CreatedOrg
	s.call("POST", "/api/v1/admin/orgs", apiv1.CreateOrgRequest{Name: "acme", Plan: &apiv1.SetPlanRequest{MaxSandboxes: 1}, Credits: "100"}, http.StatusCreated, &acme)
	owner := acme.Secret
	var orgs apiv1.OrgList
	s.call("GET", "/api/v1/admin/orgs", nil, http.StatusOK, &orgs)
	if len(orgs.Items) != 2 || orgs.Items[0].Name != "default" || orgs.Items[0].KYCStatus != "verified" || orgs.Items[1].KYCStatus != "unverified" {
		t.Fatalf("orgs: %+v", orgs)
	}
	e := s.failKey(owner, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, http.StatusForbidden, "ask the operator of this sbx to verify the org")
	if e.Type != "kyc_required" {
		t.Fatalf("type %s", e.Type)
	}
	s.failKey(owner, "GET", "/api/v1/admin/orgs", nil, http.StatusForbidden, "needs the operator's key")

	// The KYC service verifies it through the webhook.
	status, body := s.webhook(secret, time.Now(), apiv1.KYCEvent{Subject: "org", ID: "acme", Status: "verified"})
	if status != http.StatusOK || !strings.Contains(string(body), `"applied":true`) {
		t.Fatalf("webhook: %d %s", status, body)
	}
	status, body = s.webhook("wrong", time.Now(), apiv1.KYCEvent{Subject: "org", ID: "acme", Status: "unverified"})
	if status != http.StatusUnauthorized {
		t.Fatalf("a wrongly signed webhook: %d %s", status, body)
	}
	sb := s.createKey(owner)
	s.failKey(owner, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base"}, http.StatusForbidden, "plan limit: at most 1 concurrent sandboxes (1 running or starting)")

	// Workspaces, projects, members and keys of the org.
	var ws apiv1.Workspace
	s.callKey(owner, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, http.StatusCreated, &ws)
	var wss apiv1.WorkspaceList
	s.callKey(owner, "GET", "/api/v1/org/acme/workspaces", nil, http.StatusOK, &wss)
	var p apiv1.Project
	s.callKey(owner, "POST", "/api/v1/org/acme/ws/research/projects", apiv1.CreateProjectRequest{Name: "evals"}, http.StatusCreated, &p)
	var ps apiv1.ProjectList
	s.callKey(owner, "GET", "/api/v1/org/acme/ws/"+ws.ID+"/projects", nil, http.StatusOK, &ps)
	if len(wss.Items) != 2 || len(ps.Items) != 2 || p.RuntimeID == "" {
		t.Fatalf("workspaces %+v, projects %+v", wss, ps)
	}
	var mc apiv1.MemberChange
	s.callKey(owner, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "ada@example.com", Role: "admin"}, http.StatusCreated, &mc)
	var members apiv1.MemberList
	s.callKey(owner, "GET", "/api/v1/org/acme/ws/default/members", nil, http.StatusOK, &members)
	if len(members.Items) != 1 || members.Items[0].Role != "admin" {
		t.Fatalf("members %+v", members)
	}
	var user apiv1.User
	s.call("PUT", "/api/v1/admin/users/ada@example.com/verification", apiv1.VerificationRequest{Status: "verified"}, http.StatusOK, &user)
	var mk apiv1.CreatedKey
	s.callKey(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "ada", User: "ada@example.com"}, http.StatusCreated, &mk)
	var keys apiv1.APIKeyList
	s.callKey(mk.Secret, "GET", "/api/v1/org/acme/keys", nil, http.StatusOK, &keys)
	if len(keys.Items) != 2 || keys.Items[1].Scope != "member" {
		t.Fatalf("keys %+v", keys)
	}
	s.failKey(mk.Secret, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "root"}, http.StatusForbidden, "needs the owner role")

	// The member limit: a second member pauses the workspace's sandbox,
	// removing one resumes it.
	var plan apiv1.PlanChange
	s.call("PUT", "/api/v1/admin/orgs/acme/plan", apiv1.SetPlanRequest{MaxSandboxes: 1, MaxMembers: 1}, http.StatusOK, &plan)
	s.callKey(owner, "POST", "/api/v1/org/acme/ws/default/members", apiv1.AddMemberRequest{Email: "bob@example.com"}, http.StatusCreated, &mc)
	if len(mc.Paused) != 1 || mc.Paused[0] != sb.SandboxID {
		t.Fatalf("a member beyond the limit paused %v", mc.Paused)
	}
	if got := s.getKey(owner, sb.ID); got.State != "paused" || got.PauseReason != "member_limit_exceeded" {
		t.Fatalf("sandbox %s (%s)", got.State, got.PauseReason)
	}
	s.failKey(owner, "POST", "/api/v1/sandboxes/"+sb.ID+"/resume", nil, http.StatusForbidden, "workspace default has 2 members")
	s.callKey(owner, "DELETE", "/api/v1/org/acme/ws/default/members/bob@example.com", nil, http.StatusOK, &mc)
	if len(mc.Resumed) != 1 || s.getKey(owner, sb.ID).State != "running" {
		t.Fatalf("back within the limit: %+v", mc)
	}

	// Revoking a key stops it; another org's things are not found.
	var revoked apiv1.APIKey
	s.callKey(owner, "DELETE", "/api/v1/org/acme/keys/"+mk.Key.ID, nil, http.StatusOK, &revoked)
	s.failKey(mk.Secret, "GET", "/api/v1/me", nil, http.StatusUnauthorized, "not valid")
	s.fail("GET", "/api/v1/org/acme/workspaces", nil, http.StatusNotFound, "org acme not found")
	var o apiv1.Org
	s.call("PUT", "/api/v1/admin/orgs/acme/verification", apiv1.VerificationRequest{Status: "pending"}, http.StatusOK, &o)
	if o.KYCStatus != "pending" {
		t.Fatalf("org %+v", o)
	}

	// The CLI, with the operator's key from the data dir.
	if out := s.ok("org", "list"); !strings.Contains(out, "acme") || !strings.Contains(out, "pending") {
		t.Errorf("sbx org list:\n%s", out)
	}
	if out := s.ok("member", "add", "cy@example.com"); !strings.Contains(out, "added cy@example.com (member)") {
		t.Errorf("sbx member add:\n%s", out)
	}
}

func (s *server) createKey(key string) apiv1.Sandbox {
	s.t.Helper()
	var sb apiv1.Sandbox
	s.callKey(key, "POST", "/api/v1/sandboxes", map[string]any{"templateID": "base", "waitReady": true}, http.StatusCreated, &sb)
	return sb
}

func (s *server) getKey(key, id string) apiv1.Sandbox {
	s.t.Helper()
	var sb apiv1.Sandbox
	s.callKey(key, "GET", "/api/v1/sandboxes/"+id, nil, http.StatusOK, &sb)
	return sb
}

// A member's key reaches the sandboxes of the workspaces its user is a
// member of, and no others: not by ID, not in lists, not through the agent's
// routes, not in usage. An owner's and an org-wide key reach them all.
func TestMemberKeysReachOnlyTheirWorkspaces(t *testing.T) {
	s := startServer(t, serverOpts{})
	var ws apiv1.Workspace
	s.call("POST", "/api/v1/org/default/workspaces", apiv1.CreateWorkspaceRequest{Name: "lab"}, http.StatusCreated, &ws)
	var rts apiv1.RuntimeList
	s.call("GET", "/api/v1/org/default/ws/lab/runtimes", nil, http.StatusOK, &rts)
	var rt apiv1.Runtime
	s.call("POST", "/api/v1/org/default/ws/lab/runtimes/"+rts.Items[0].ID+"/start", apiv1.StartRuntimeRequest{}, http.StatusOK, &rt)
	lab := rt.Sandbox.ID
	home := s.create(nil).ID // in the default workspace

	var mc apiv1.MemberChange
	s.call("POST", "/api/v1/org/default/ws/default/members", apiv1.AddMemberRequest{Email: "ada@example.com", Role: "admin"}, http.StatusCreated, &mc)
	var mk apiv1.CreatedKey
	s.call("POST", "/api/v1/org/default/keys", apiv1.CreateKeyRequest{Name: "ada", User: "ada@example.com"}, http.StatusCreated, &mk)
	ada := mk.Secret

	s.getKey(ada, home)
	for _, path := range []string{"/api/v1/sandboxes/" + lab, "/api/v1/sandboxes/" + lab + "/metrics", "/api/v1/org/default/sandboxes/" + rt.Sandbox.SandboxID} {
		s.failKey(ada, "GET", path, nil, http.StatusNotFound, "not found")
	}
	s.failKey(ada, "POST", "/api/v1/sandboxes/"+lab+"/commands", map[string]any{"cmd": "env"}, http.StatusNotFound, "not found")
	s.failKey(ada, "DELETE", "/api/v1/sandboxes/"+lab, nil, http.StatusNotFound, "not found")
	var list apiv1.SandboxList
	s.callKey(ada, "GET", "/api/v1/sandboxes", nil, http.StatusOK, &list)
	if len(list.Items) != 1 || list.Items[0].ID != home {
		t.Errorf("ada lists %+v, want only %s", list.Items, home)
	}
	var usage apiv1.OrgUsage
	s.callKey(ada, "GET", "/api/v1/org/default/sandboxes/usage", nil, http.StatusOK, &usage)
	if len(usage.Projects) != 1 || usage.Total.Sandboxes != 1 {
		t.Errorf("ada's usage %+v, want the default workspace's project only", usage)
	}
	if got := s.get(lab); got.State != "running" {
		t.Fatalf("the lab's sandbox is %s after ada's tries", got.State)
	}

	s.call("POST", "/api/v1/org/default/ws/lab/members", apiv1.AddMemberRequest{Email: "ada@example.com"}, http.StatusCreated, &mc)
	s.getKey(ada, lab)
	s.callKey(ada, "GET", "/api/v1/sandboxes", nil, http.StatusOK, &list)
	if len(list.Items) != 2 {
		t.Errorf("a member of both lists %d sandboxes", len(list.Items))
	}
}
