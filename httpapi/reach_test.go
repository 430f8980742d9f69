package httpapi_test

import (
	"fmt"
	"testing"

	"github.com/sbxdev/sbx"
	"github.com/sbxdev/sbx/apiv1"
)

// Keys reach only what their maker reaches: making or revoking a key needs,
// in every workspace the key reaches, the admin role and at least the role
// the key acts with there (authz.Policy.ManageKey). Every caller role ×
// target (member, admin, owner, project key) × same or other workspace.
func TestKeysStayWithinTheirMakersWorkspaces(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified"})
	owner := acme.Secret
	var research apiv1.Workspace
	s.call(owner, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, 201, &research)
	var projects apiv1.ProjectList
	s.call(owner, "GET", "/api/v1/org/acme/ws/research/projects", nil, 200, &projects)
	projectB := projects.Items[0].ID

	callers := map[string]string{
		"org key":                 owner,
		"owner user":              s.member(owner, "acme", "research", "olga@example.com", sbx.RoleOwner),
		"admin of A":              s.member(owner, "acme", "default", "ada@example.com", sbx.RoleAdmin),
		"admin of A, member of B": s.member(owner, "acme", "default", "abe@example.com", sbx.RoleAdmin),
		"admin of A and B":        s.member(owner, "acme", "default", "amy@example.com", sbx.RoleAdmin),
		"member of A":             s.member(owner, "acme", "default", "bob@example.com", sbx.RoleMember),
	}
	s.call(owner, "POST", "/api/v1/org/acme/ws/research/members", apiv1.AddMemberRequest{Email: "abe@example.com", Role: "member"}, 201, nil)
	s.call(owner, "POST", "/api/v1/org/acme/ws/research/members", apiv1.AddMemberRequest{Email: "amy@example.com", Role: "admin"}, 201, nil)
	var pk apiv1.CreatedKey
	s.call(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "ci", ProjectID: acme.Project.ID}, 201, &pk)
	callers["project key of A"] = pk.Secret

	// The targets: users by their memberships, and projects.
	for email, ms := range map[string][][2]string{
		"mia@example.com": {{"default", "member"}}, "aly@example.com": {{"default", "admin"}},
		"mo@example.com": {{"research", "member"}}, "al@example.com": {{"research", "admin"}},
		"both@example.com": {{"default", "member"}, {"research", "member"}},
	} {
		for _, m := range ms {
			s.call(owner, "POST", "/api/v1/org/acme/ws/"+m[0]+"/members", apiv1.AddMemberRequest{Email: email, Role: m[1]}, 201, nil)
		}
	}
	targets := []struct {
		name string
		body apiv1.CreateKeyRequest
	}{
		{"member of A", apiv1.CreateKeyRequest{User: "mia@example.com"}},
		{"admin of A", apiv1.CreateKeyRequest{User: "aly@example.com"}},
		{"owner", apiv1.CreateKeyRequest{User: "olga@example.com"}},
		{"project of A", apiv1.CreateKeyRequest{ProjectID: acme.Project.ID}},
		{"member of B", apiv1.CreateKeyRequest{User: "mo@example.com"}},
		{"admin of B", apiv1.CreateKeyRequest{User: "al@example.com"}},
		{"project of B", apiv1.CreateKeyRequest{ProjectID: projectB}},
		{"member of A and B", apiv1.CreateKeyRequest{User: "both@example.com"}},
		{"org-wide", apiv1.CreateKeyRequest{}},
	}
	allowed := map[string][]string{
		"org key":                 {"member of A", "admin of A", "owner", "project of A", "member of B", "admin of B", "project of B", "member of A and B", "org-wide"},
		"owner user":              {"member of A", "admin of A", "owner", "project of A", "member of B", "admin of B", "project of B", "member of A and B", "org-wide"},
		"admin of A":              {"member of A", "admin of A", "project of A"},
		"admin of A, member of B": {"member of A", "admin of A", "project of A"},
		"admin of A and B":        {"member of A", "admin of A", "project of A", "member of B", "admin of B", "project of B", "member of A and B"},
		"member of A":             nil,
		"project key of A":        nil,
	}
	// Each target's key, made by the org's owner, for the revoke half.
	made := map[string]apiv1.CreatedKey{}
	for _, tg := range targets {
		body := tg.body
		body.Name = "made by the owner for " + tg.name
		var k apiv1.CreatedKey
		s.call(owner, "POST", "/api/v1/org/acme/keys", body, 201, &k)
		made[tg.name] = k
	}
	for caller, key := range callers {
		may := map[string]bool{}
		for _, tg := range allowed[caller] {
			may[tg] = true
		}
		for _, tg := range targets {
			body := tg.body
			body.Name = fmt.Sprintf("%s for %s", caller, tg.name)
			var keys apiv1.APIKeyList
			s.call(owner, "GET", "/api/v1/org/acme/keys?limit=200", nil, 200, &keys)
			status, data := s.send(key, "POST", "/api/v1/org/acme/keys", body, nil)
			var after apiv1.APIKeyList
			s.call(owner, "GET", "/api/v1/org/acme/keys?limit=200", nil, 200, &after)
			switch {
			case may[tg.name] && status != 201:
				t.Errorf("%s making a key for %s: %d %s, want 201", caller, tg.name, status, data)
			case !may[tg.name]:
				s.refused(caller+" making a key for "+tg.name, status, data, 403, "forbidden", "needs the")
				if len(after.Items) != len(keys.Items) {
					t.Errorf("%s making a key for %s: refused, yet a key was made", caller, tg.name)
				}
			}
			if !may[tg.name] {
				status, data = s.send(key, "DELETE", "/api/v1/org/acme/keys/"+made[tg.name].Key.ID, nil, nil)
				s.refused(caller+" revoking the key of "+tg.name, status, data, 403, "forbidden", "needs the")
				s.call(made[tg.name].Secret, "GET", "/api/v1/me", nil, 200, nil)
			}
		}
	}
	// What a refusal says: the workspace, the role needed and the key's.
	s.fail(callers["admin of A"], "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "x", User: "mo@example.com"}, 403, "forbidden",
		"making a member's key (it acts as member there) needs the admin or owner role in workspace research; this key does not reach it")
	s.fail(callers["admin of A, member of B"], "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "x", ProjectID: projectB}, 403, "forbidden",
		"making a key of project "+projectB+" (it acts as member there) needs the admin or owner role in workspace research; this key acts as member there")
	// An allowed revoke works.
	s.call(callers["admin of A"], "DELETE", "/api/v1/org/acme/keys/"+made["member of A"].Key.ID, nil, 200, nil)
}

// Workspaces, their members and their projects are seen only by the keys
// that reach them: a member's key its user's workspaces, a project's key its
// project and its workspace.
func TestWorkspaceListsStayWithinReach(t *testing.T) {
	s := newStack(t, stackOpts{})
	acme := s.org(apiv1.CreateOrgRequest{Name: "acme", KYCStatus: "verified"})
	owner := acme.Secret
	s.call(owner, "POST", "/api/v1/org/acme/workspaces", apiv1.CreateWorkspaceRequest{Name: "research"}, 201, nil)
	s.call(owner, "POST", "/api/v1/org/acme/ws/default/projects", apiv1.CreateProjectRequest{Name: "evals"}, 201, nil)
	s.member(owner, "acme", "research", "ra@example.com", sbx.RoleAdmin)
	memberA := s.member(owner, "acme", "default", "bob@example.com", sbx.RoleMember)
	adminA := s.member(owner, "acme", "default", "ada@example.com", sbx.RoleAdmin)
	var pk apiv1.CreatedKey
	s.call(owner, "POST", "/api/v1/org/acme/keys", apiv1.CreateKeyRequest{Name: "ci", ProjectID: acme.Project.ID}, 201, &pk)

	for name, key := range map[string]string{"member": memberA, "admin": adminA, "project key": pk.Secret} {
		var wss apiv1.WorkspaceList
		s.call(key, "GET", "/api/v1/org/acme/workspaces", nil, 200, &wss)
		if len(wss.Items) != 1 || wss.Items[0].Name != "default" {
			t.Errorf("%s of default lists workspaces %+v", name, wss.Items)
		}
		for _, path := range []string{"/api/v1/org/acme/ws/research/members", "/api/v1/org/acme/ws/research/projects"} {
			s.fail(key, "GET", path, nil, 403, "forbidden", "in workspace research; this key does not reach it")
		}
		var members apiv1.MemberList
		s.call(key, "GET", "/api/v1/org/acme/ws/default/members", nil, 200, &members)
		if len(members.Items) != 2 {
			t.Errorf("%s lists %d members of default, want 2", name, len(members.Items))
		}
	}
	var ps apiv1.ProjectList
	s.call(memberA, "GET", "/api/v1/org/acme/ws/default/projects", nil, 200, &ps)
	if len(ps.Items) != 2 {
		t.Errorf("a member of default lists projects %+v", ps.Items)
	}
	s.call(pk.Secret, "GET", "/api/v1/org/acme/ws/default/projects", nil, 200, &ps)
	if len(ps.Items) != 1 || ps.Items[0].ID != acme.Project.ID {
		t.Errorf("a project's key lists projects %+v", ps.Items)
	}
	var wss apiv1.WorkspaceList
	s.call(owner, "GET", "/api/v1/org/acme/workspaces", nil, 200, &wss)
	if len(wss.Items) != 2 {
		t.Errorf("the owner lists workspaces %+v", wss.Items)
	}
}
